"""A run whose storage failed mid-answer: its readers get an ``error`` event with the code
``storage_unavailable`` (kept in memory, as the log cannot take it), then the end is written
if the storage is back; otherwise the database keeps the run ``running`` with every event
logged before the failure, and the next start marks it interrupted. Nothing stored is lost."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from app.wire.protocol import encode_event, end_error
from server.runs.live import LiveRun, terminal_status
from server.store.faults import is_storage_failure

if TYPE_CHECKING:
    from server.runs.registry import RunRegistry

log = logging.getLogger("riacho.storage")
WORDS = "The server could not store this answer (its storage failed); nothing stored was lost."


def _ended_already(run: LiveRun) -> bool:
    """The run's last frame is a terminal event (only writing its status failed)."""
    if not run.frames:
        return False
    try:
        payload = json.loads(run.frames[-1].data)
    except ValueError:
        return False
    return isinstance(payload, dict) and terminal_status(payload) is not None


async def end_unstored(registry: RunRegistry, run: LiveRun, error: BaseException) -> None:
    """End ``run`` for its readers after a storage failure (``error``)."""
    log.warning("storage failed mid-answer run=%s: %s", run.run_id, error)
    if not _ended_already(run):
        seq = run.last_seq + 1
        event = end_error(WORDS, "storage_unavailable", run.run_id, seq)
        run.record(seq, encode_event(event), event)
    try:
        await registry.finish(run, "failed", "storage_unavailable")
    except Exception as again:
        if not is_storage_failure(again):
            raise
        run.end("failed")  # NOTE: in memory only: readers end; the log still says running
