"""Tools that act (SPEC §12): MCP servers, approval before effects, every effect at most once.

- ``connections``: one live connection per ``[[mcp]]`` server (the official ``mcp`` SDK; stdio
  or Streamable HTTP), its tools listed, its state (``up`` / ``down`` and why) said, never a crash.
- The states of one call and their transitions, pure: ``server/contract/tool_effects.py``
  (the store applies them: ``server/store/tool_calls.py``, the ledger).
- ``approvals``: waiting for the user's decision (from any worker: the store holds it), the
  deadline, Stop; and the decision itself, where the first one stands.
- ``calls``: one MCP tool call run at most once: the ledger row is written before the call
  starts and after it ends; the idempotency key goes to the server; bounded in time and size.
"""
