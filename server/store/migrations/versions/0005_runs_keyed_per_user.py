"""Runs are keyed per user (server.store.runlog.run_key): ``user/run``.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute("UPDATE runs SET id = user_id || '/' || id WHERE id NOT LIKE '%/%'")


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
