"""Run routes: state, cancel, and resume (``GET /api/runs/{runId}/events``)."""

from __future__ import annotations

import asyncio
import re

from aiohttp import web

from app.wire.api import CancelResult, RunInfo
from server.auth import current_user
from server.db import Row
from server.errors import ApiError
from server.jsonio import answer_payload
from server.runs import log as runlog
from server.runs.stream import follow_run, open_sse, write_frames
from server.services import Services, services


def _own_run(svc: Services, user_id: str, run_id: str) -> Row:
    row = runlog.run_row(svc.db, user_id, run_id)
    if row is None or row["user_id"] != user_id:
        raise ApiError(404, "run_not_found", f"run {run_id!r} not found")
    return row


def run_info(svc: Services, row: Row) -> RunInfo:
    """The public state of a persisted run (live runs report their in-memory last seq)."""
    live = svc.runs.live.get(row["id"])
    return RunInfo(
        run_id=runlog.public_id(row["id"]),
        chat_id=row["chat_id"],
        message_id=row["message_id"],
        status=row["status"],
        last_seq=live.last_seq if live else row["last_seq"],
        attempt=row["attempt"],
        expired=runlog.is_expired(row, svc.config.retention_s),
        reason=row["reason"],
    )


async def get_run(request: web.Request) -> web.Response:
    """``GET /api/runs/{runId}``."""
    svc = services(request)
    row = _own_run(svc, current_user(request), request.match_info["run_id"])
    return answer_payload(run_info(svc, row))


async def cancel_run(request: web.Request) -> web.Response:
    """``POST /api/runs/{runId}/cancel``: idempotent; answers the persisted status after it."""
    svc, user_id, run_id = services(request), current_user(request), request.match_info["run_id"]
    if runlog.run_row(svc.db, user_id, run_id) is None and not runlog.id_in_use(svc.db, run_id):
        # NOTE: its stream request may still be on its way: the cancel is kept for it, and
        # accepted, not yet confirmed (SPEC §4); an id that never comes stays "running".
        svc.runs.note_early_cancel(user_id, run_id)
        return answer_payload(CancelResult(run_id=run_id, status="running"))
    _own_run(svc, user_id, run_id)
    status = await asyncio.shield(svc.runs.cancel(user_id, run_id))
    if status is None:
        raise ApiError(404, "run_not_found", f"run {run_id!r} not found")
    return answer_payload(CancelResult(run_id=run_id, status=status))


MAX_SEQ = 2**62
_SEQ_RE = re.compile(r"-?[0-9]{1,19}")


def _after(request: web.Request) -> int:
    """The last seq the reader has (decided before any header is sent: a bad one is 400)."""
    raw = request.query.get("after", request.headers.get("Last-Event-ID", "0")).strip() or "0"
    if not _SEQ_RE.fullmatch(raw):
        raise ApiError(400, "invalid_body", "Last-Event-ID / after must be an integer")
    after = int(raw)
    if not -MAX_SEQ <= after <= MAX_SEQ:
        raise ApiError(400, "invalid_body", "Last-Event-ID / after is out of range")
    return after


async def run_events(request: web.Request) -> web.StreamResponse:
    """Replay ``seq > N`` from the log, then the live tail; 410 ``events_expired``."""
    svc = services(request)
    row = _own_run(svc, current_user(request), request.match_info["run_id"])
    after = _after(request)
    if runlog.is_expired(row, svc.config.retention_s):
        raise ApiError(410, "events_expired", "this run's events are no longer kept")
    live = svc.runs.live.get(row["id"])
    response = await open_sse(request)
    if live is None:
        await write_frames(response, runlog.load_frames(svc.db, row["id"], after))
        return response
    await follow_run(svc.runs, live, response, after)
    return response
