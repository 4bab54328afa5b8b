"""The error codes of the contract: one vocabulary for the server, the page and the tests.

A code travels as a string on the wire (``{"error": {"code"}}`` before a stream, an ``error``
event's ``code`` in it), so a typo or a new code would otherwise reach the page unnoticed and
be shown as "Something went wrong". Here each code is a ``Literal`` member: the reference
server types what it sends with them (mypy refuses any other string), and a test fails when
the page has no words for one of them (``app.ui.render.ERROR_TEXT``).

    ApiErrorCode        answered before a stream starts (SPEC §4), with an HTTP status
    EndErrorCode        the ``code`` of a terminal ``error`` event
    ClientErrorCode     made by the page itself (the network, a timeout, the wire contract)
    RunEndCause         why a run ended, when no error code says it (kept with the run)

A production backend may send codes of its own: the page shows the server's message for those.
"""

from __future__ import annotations

from typing import Final, Literal, TypeGuard, get_args

ApiErrorCode = Literal[
    "attachment_empty",
    "attachment_too_large",
    "attachment_type_mismatch",
    "attachment_type_unsupported",
    "attachment_unavailable",
    "body_too_large",
    "chat_not_found",
    "conflict",
    "decision_taken",
    "empty_prompt",
    "events_expired",
    "host_refused",
    "http_error",
    "invalid_body",
    "invalid_credentials",
    "invalid_header",
    "invalid_import",
    "method_not_allowed",
    "model_not_found",
    "model_unavailable",
    "no_worker",
    "not_found",
    "origin_refused",
    "prompt_too_large",
    "provider_disconnected",
    "provider_error",
    "provider_refused",
    "provider_timeout",
    "result_taken",
    "run_exists",
    "run_not_found",
    "server_stopping",
    "storage_unavailable",
    "too_many_attachments",
    "too_many_attempts",
    "too_many_readers",
    "tool_call_not_found",
    "too_many_runs",
    "unauthenticated",
    "unknown_format",
    "unsupported_media_type",
]
"""Codes of ``{"error": {"code", "message"}}`` answers (the ``provider_*`` ones: a model
refused the request in a way that is not "unavailable", 502)."""

FailureCode = Literal[
    "provider_unavailable",
    "provider_error",
    "provider_refused",
    "provider_disconnected",
    "provider_timeout",
]
"""Why a model call failed, as its adapter says (``provider_unavailable`` is answered
``model_unavailable`` before a stream and ``provider_error`` in one)."""

EndErrorCode = Literal[
    "generation_failed",
    "model_unavailable",
    "provider_disconnected",
    "provider_error",
    "provider_refused",
    "provider_timeout",
    "server_restarted",
    "server_shutdown",
    "storage_unavailable",
    "stream_error",
    "worker_lost",
]
"""Codes of the terminal ``error`` events the reference server sends."""

ClientTimeoutCode = Literal["first_event_timeout", "idle_timeout", "total_timeout"]
"""The page's own timeouts: the codes it fails a run with, and tells the server when it cancels
that run for one (``POST /api/runs/{runId}/cancel`` ``{"reason"}``)."""

ClientErrorCode = (
    Literal["attachment_refused", "chat_error", "event_too_large", "network_error"]
    | ClientTimeoutCode
)
"""Codes the page makes itself."""

ErrorCode = ApiErrorCode | EndErrorCode | ClientErrorCode

RunEndCause = Literal[
    "cancelled",
    "orphaned",
    "server_restarted",
    "server_shutdown",
    "stream_ended",
    "user_cancelled",
    "worker_lost",
]
"""Why a run ended, as the reference server keeps it (``RunInfo.reason``, a message's ``reason``)
when no error code says it: ``user_cancelled`` (Stop), ``orphaned`` (nobody read it),
``cancelled`` (the generator ended itself with ``done(cancelled)``), ``stream_ended`` (it
stopped without a terminal event), ``server_shutdown`` / ``server_restarted`` (the server
stopped under it), ``worker_lost`` (the process writing it is gone). A failed run's reason is its
error code; a run the page cancelled for a timeout keeps the page's ``ClientTimeoutCode``."""

RUN_END_CAUSES: Final[frozenset[str]] = frozenset(get_args(RunEndCause))

RunReason = RunEndCause | ErrorCode
"""A reason the reference server decides for a run's end (a failure's code relayed from its
``error`` event is the event's own: a production backend may use codes of its own)."""


def _words(kind: object) -> frozenset[str]:
    """The strings of a ``Literal``, or of a union of them."""
    return frozenset(
        arg for part in get_args(kind) for arg in (_words(part) if get_args(part) else (part,))
    )


ERROR_CODES: Final[frozenset[str]] = _words(ErrorCode)
"""Every code of the vocabulary."""


def is_run_end_cause(reason: str | None) -> TypeGuard[RunEndCause]:
    """``reason`` (a run's, read back) is one of the server's end causes."""
    return reason in RUN_END_CAUSES
