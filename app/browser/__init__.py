"""The browser adapter: the only package that touches ``js`` and ``pyodide``.

``edge`` converts values and owns listeners, timers and page signals; ``net`` is ``fetch`` and
the store's transport; ``dom`` renders the view into the page; ``page`` binds the controls.
"""
