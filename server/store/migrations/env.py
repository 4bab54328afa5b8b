"""Alembic's environment: the server hands it an open connection (``server.store.migrations``).

# NOTE: Alembic's documented way of sharing one connection with its commands; the server's
# caller holds the transaction (and the lock around it), so nothing here begins or commits.
"""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise SystemExit("Riacho's migrations run when the server starts: python -m server --db …")
context.configure(connection=connection, transaction_per_migration=False)
with context.begin_transaction():
    context.run_migrations()
