"""A chat's id is the user's own name for it (``public_id``), unique per user.

The page names a new chat itself; another user's chat of the same name is another chat, so a
first answer into it is answered as into a name nobody has used (SPEC §4). ``id`` stays the
row's key, which messages and runs reference; it equals ``public_id`` unless that was taken.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE chats ADD COLUMN public_id TEXT")
    op.execute("UPDATE chats SET public_id = id")
    op.execute("CREATE UNIQUE INDEX IF NOT EXISTS chats_user_public ON chats(user_id, public_id)")


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
