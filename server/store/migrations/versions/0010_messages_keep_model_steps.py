"""An answer keeps what its provider needs to continue from it: one record per model call.

``steps`` is a JSON list, one object per model call of the answer: the model that made it
(``source``), its text, its tool calls (the run's id and the provider's), and ``native``, what
that provider must be sent back (Anthropic's signed thinking blocks, Gemini's parts with their
thought signatures, the Responses API's reasoning items, a Chat Completions server's reasoning
under the field it arrived in). See ``server/model/conversation.py``.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE messages ADD COLUMN steps TEXT NOT NULL DEFAULT '[]'")


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
