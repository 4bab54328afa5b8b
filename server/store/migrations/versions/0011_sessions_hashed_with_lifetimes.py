"""Sessions are kept by the sha256 of their token, with the time they were last used.

A copy of the database then holds no live session (the cookie's token is not in it), and the
server ends a session unused for its idle lifetime or older than its absolute one
(``server.store.users``). The tokens already issued are hashed in place, so nobody is signed
out by the upgrade; their last use is taken to be their creation.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    bind = op.get_bind()
    real = "REAL" if bind.dialect.name == "sqlite" else "DOUBLE PRECISION"
    op.execute("ALTER TABLE sessions RENAME COLUMN token TO token_hash")
    op.execute(f"ALTER TABLE sessions ADD COLUMN last_seen_at {real}")
    for (token,) in bind.execute(sa.text("SELECT token_hash FROM sessions")).fetchall():
        bind.execute(
            sa.text("UPDATE sessions SET token_hash = :hashed WHERE token_hash = :token"),
            {"hashed": hashlib.sha256(token.encode()).hexdigest(), "token": token},
        )
    op.execute("UPDATE sessions SET last_seen_at = created_at")
    op.execute("CREATE INDEX IF NOT EXISTS sessions_user ON sessions(user_id)")


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
