"""The HTTP routes (SPEC §4, §9): one module per resource, the table here."""

from __future__ import annotations

from aiohttp import web

from server.http.auth import get_session, sign_in, sign_out, sign_out_everywhere
from server.routes.chat_files import export_chat, import_chat
from server.routes.chats import (
    compact_chat,
    create_chat,
    delete_chat,
    get_chat,
    list_chats,
    rename_chat,
)
from server.routes.client_tools import post_client_result
from server.routes.misc import get_attachment, list_models, upload_attachment
from server.routes.respond import respond_stream
from server.routes.runs import cancel_run, get_run, run_events
from server.routes.settings import get_settings, patch_settings
from server.routes.test_hooks import queue_scenario, reset, run_trace
from server.routes.tool_calls import decide_tool_call, list_tool_calls


def api_routes() -> list[web.RouteDef]:
    """Every ``/api`` route."""
    return [
        web.get("/api/session", get_session),
        web.post("/api/session/sign-in", sign_in),
        web.post("/api/session/sign-out", sign_out),
        web.post("/api/session/sign-out-everywhere", sign_out_everywhere),
        web.get("/api/models", list_models),
        web.get("/api/settings", get_settings),
        web.patch("/api/settings", patch_settings),
        web.get("/api/chats", list_chats),
        web.post("/api/chats", create_chat),
        web.post("/api/chats/import", import_chat),
        web.get("/api/chats/{chat_id}/export", export_chat),
        web.get("/api/chats/{chat_id}", get_chat),
        web.delete("/api/chats/{chat_id}", delete_chat),
        web.patch("/api/chats/{chat_id}", rename_chat),
        web.post("/api/chats/{chat_id}/compact", compact_chat),
        web.post("/api/respond/stream", respond_stream),
        web.get("/api/runs/{run_id}", get_run),
        web.post("/api/runs/{run_id}/cancel", cancel_run),
        web.get("/api/runs/{run_id}/events", run_events),
        web.get("/api/runs/{run_id}/tool-calls", list_tool_calls),
        web.post("/api/runs/{run_id}/tool-calls/{tool_call_id}/decision", decide_tool_call),
        web.post("/api/runs/{run_id}/tool-calls/{tool_call_id}/result", post_client_result),
        web.post("/api/attachments", upload_attachment),
        web.get("/api/attachments/{attachment_id}", get_attachment),
    ]


def add_test_routes(app: web.Application) -> None:
    """The ``/__test__`` routes (only with ``--test-hooks``)."""
    app.router.add_routes(
        [
            web.post("/__test__/scenarios", queue_scenario),
            web.get("/__test__/runs/{run_id}", run_trace),
            web.post("/__test__/reset", reset),
        ]
    )
