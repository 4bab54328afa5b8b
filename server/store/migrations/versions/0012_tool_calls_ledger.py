"""Tools that act (SPEC §12): the ledger of tool calls, one row per run and call id.

A row is written before a call starts and after it ends (server/store/tool_calls.py): its
``state`` moves only along server/contract/tool_effects.py's transitions, each one a conditional
update, so a resume, a replay, a restart, a second worker or a repeated decision finds the row
instead of running the call again.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    real = "DOUBLE PRECISION" if op.get_bind().dialect.name == "postgresql" else "REAL"
    op.execute(
        "CREATE TABLE IF NOT EXISTS tool_calls ("
        " run_key TEXT NOT NULL, tool_call_id TEXT NOT NULL, tool_name TEXT NOT NULL,"
        " arguments TEXT NOT NULL, acts INTEGER NOT NULL, state TEXT NOT NULL,"
        " decided_by TEXT, reason TEXT, result TEXT, is_error INTEGER NOT NULL DEFAULT 0,"
        f" deadline_at {real}, created_at {real} NOT NULL, updated_at {real} NOT NULL,"
        " PRIMARY KEY (run_key, tool_call_id))"
    )
    op.execute("CREATE INDEX IF NOT EXISTS tool_calls_state ON tool_calls(state)")


def downgrade() -> None:
    raise NotImplementedError("Riacho's migrations go forward only")
