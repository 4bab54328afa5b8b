"""All SQL: the database on SQLite or PostgreSQL (``db``), its migrations, and the rows of
chats, messages, attachments, users and sessions, runs and their event logs (``runlog``)."""
