"""Children of a message are found by its id.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS messages_parent ON messages(reply_to)")


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
