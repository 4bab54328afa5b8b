"""Messages form a tree (edits branch).

A user message follows the answer shown before it, which in a chat stored before branches is
the latest attempt of the prompt before it.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute(
        "UPDATE messages SET reply_to = (SELECT a.id FROM messages a WHERE a.chat_id ="
        " messages.chat_id AND a.role = 'assistant' AND a.reply_to = (SELECT p.id FROM messages p"
        " WHERE p.chat_id = messages.chat_id AND p.role = 'user' AND p.rowid < messages.rowid"
        " ORDER BY p.rowid DESC LIMIT 1) ORDER BY a.attempt DESC, a.rowid DESC LIMIT 1)"
        " WHERE role = 'user' AND reply_to IS NULL"
    )


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
