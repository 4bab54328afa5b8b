"""Accounts with passwords (``--auth password``).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE users ADD COLUMN password_hash TEXT")


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
