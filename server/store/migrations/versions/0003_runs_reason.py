"""Why a run ended (a code such as ``orphaned``).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE runs ADD COLUMN reason TEXT")


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
