"""Every process looks for running runs (lost owners, per-user limits).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS runs_status ON runs(status, user_id)")


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
