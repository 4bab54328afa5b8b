"""A small MCP server for Riacho's tools that act: notes saved to a file.

    python examples/notes_server.py                  # stdio (riacho.example.toml starts it)
    python examples/notes_server.py --http --port 9000        # http://127.0.0.1:9000/mcp

``save_note`` acts (it appends one line to ``$NOTES_FILE``, default ``notes.txt``), so Riacho asks
the user before it runs; ``list_notes`` is read-only (``readOnlyHint``) and runs at once. Each line
saved carries the idempotency key Riacho sent in the request's ``_meta``
(``riacho/idempotencyKey``): a key already in the file is not written again, so even a client
that repeated a request would not add a second line. ``$NOTES_SLOW_S`` makes ``save_note`` wait
that long first (tests stop or kill a call mid-way with it; a call cancelled then is written to
``$NOTES_FILE.cancelled``, never saved); ``$NOTES_TOKEN``, when set, is the bearer token the
HTTP server wants.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

KEY = "riacho/idempotencyKey"
server = MCPServer("notes", instructions="Notes saved to a file, one per line.")


def notes_file() -> Path:
    """Where the notes live (``$NOTES_FILE``)."""
    return Path(os.environ.get("NOTES_FILE", "notes.txt"))


def read_notes() -> list[dict[str, Any]]:
    """Every note saved so far, oldest first."""
    path = notes_file()
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _idempotency_key(ctx: Context) -> str | None:
    meta = ctx.request_context.meta
    if meta is None:
        return None
    value = meta.get(KEY) if isinstance(meta, dict) else getattr(meta, KEY, None)
    if value is None and hasattr(meta, "model_extra"):
        value = (meta.model_extra or {}).get(KEY)
    return str(value) if value is not None else None


def _check_token(ctx: Context) -> None:
    token = os.environ.get("NOTES_TOKEN")
    if not token:
        return
    headers = ctx.headers or {}
    if headers.get("authorization") != f"Bearer {token}":
        raise ToolError("missing or wrong bearer token")


@server.tool(
    annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True)
)
async def save_note(text: str, ctx: Context) -> str:
    """Save a note (one line in the notes file)."""
    _check_token(ctx)
    key = _idempotency_key(ctx)
    slow = float(os.environ.get("NOTES_SLOW_S", "0") or 0)
    try:
        await asyncio.sleep(slow)
    except asyncio.CancelledError:
        _note_cancelled(key)  # NOTE: the client cancelled the request (MCP cancellation)
        raise
    if key is not None and any(note.get("key") == key for note in read_notes()):
        return f"already saved: {text}"
    path = notes_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps({"text": text, "key": key}, ensure_ascii=False) + "\n")
    return f"saved: {text}"


def _note_cancelled(key: str | None) -> None:
    with Path(f"{notes_file()}.cancelled").open("a", encoding="utf-8") as file:
        file.write(json.dumps({"cancelled": key}) + "\n")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def list_notes(ctx: Context) -> str:
    """Every note saved so far, one per line."""
    _check_token(ctx)
    return "\n".join(str(note["text"]) for note in read_notes()) or "(no notes yet)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args()
    if args.http:
        server.run("streamable-http", host=args.host, port=args.port)
    else:
        try:
            server.run()
        except* BrokenPipeError:
            pass  # NOTE: the client went away mid-answer (Riacho stopped, or was killed)


if __name__ == "__main__":
    main()
