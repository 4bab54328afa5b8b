"""A chat can be pinned (``pinned_at``: listed first, under "Pinned"), and each user keeps
their settings on the server (``user_settings``: one JSON object per user, the page's theme and
the defaults of a new chat; see server/routes/settings.py).

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    real = "DOUBLE PRECISION" if op.get_bind().dialect.name == "postgresql" else "REAL"
    op.execute(f"ALTER TABLE chats ADD COLUMN pinned_at {real}")
    op.execute(
        "CREATE TABLE IF NOT EXISTS user_settings ("
        f" user_id TEXT PRIMARY KEY, data TEXT NOT NULL, updated_at {real} NOT NULL)"
    )


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
