"""Running: the async work behind the store's commands.

``transport`` (the network seams), ``runner`` (reading a run's stream: timeouts, resume),
``cancel`` (stop end to end), ``chats`` (loading and switching chats), ``chat_stream`` (the
commands), ``config`` (timeouts from the page's query).
"""
