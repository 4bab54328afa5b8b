"""Run events follow their run's per-user key (0005).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute(
        "UPDATE run_events SET run_id = (SELECT r.user_id || '/' || r.id FROM runs r"
        " WHERE r.id = run_events.run_id) WHERE run_id IN (SELECT id FROM runs)"
    )


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
