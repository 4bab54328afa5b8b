"""Every limit the server enforces, in one place.

Each field names what it bounds and what a client gets beyond it; ``tests/server/test_limits.py``
holds one test per limit that fails when the limit is removed. A limit is decided here and
enforced by one module (named after each group), never restated elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

_MINUTE = 60.0
_DAY = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Limits:
    """Sizes, rates, counts and lifetimes the server holds every client to."""

    # --- request bodies and uploads (server.contract.jsonio, server.routes.chats) ----------
    attachment_max_bytes: int = 5 * 1024 * 1024
    attachment_ttl_s: float = _DAY
    attachment_types: frozenset[str] = frozenset(
        {
            "image/png",
            "image/jpeg",
            "image/gif",
            "image/webp",
            "text/plain",
            "text/markdown",
            "text/csv",
            "application/json",
            "application/pdf",
        }
    )
    scenario_max_bytes: int = 16 * 1024 * 1024  # the /__test__ routes only
    body_max_bytes: int = 1024 * 1024  # any other JSON body
    prompt_max_bytes: int = 256 * 1024
    attachments_per_request: int = 10
    json_max_depth: int = 64

    # --- runs (server.runs.registry, server.runs.readers) ------------------------------------
    runs_per_user: int = 4  # concurrent runs; more is 429 too_many_runs
    readers_per_user: int = 32  # concurrent event readers; more is 429 too_many_readers
    readers_per_run: int = 16  # concurrent readers of one run; more is 429 too_many_readers

    # --- passwords (server.http.passwords, server.http.throttle) ----------------------------
    password_workers: int = 2  # threads verifying argon2 hashes, off the event loop
    password_queue: int = 32  # checks waiting for a thread; more is 429 too_many_attempts
    free_attempts_per_account: int = 3  # wrong passwords before a wait is imposed
    free_attempts_per_client: int = 20  # per address: loopback users share one
    attempt_delay_s: float = 1.0  # the first wait; it doubles with each further failure
    attempt_delay_max_s: float = 15 * _MINUTE
    attempt_memory_s: float = _DAY  # failures older than this are forgotten
    attempt_keys_kept: int = 100_000  # accounts and addresses remembered; the oldest go first

    # --- sessions (server.http.auth, server.store.users) -------------------------------------
    session_idle_s: float = 7 * _DAY  # unused this long, a session ends
    session_absolute_s: float = 30 * _DAY  # and it never outlives this, used or not
    anonymous_session_absolute_s: float = 365 * _DAY

    # --- connections (server.http.deadlines) -------------------------------------------------
    header_deadline_s: float = 10.0  # a request's line and headers must arrive within this
    body_min_bytes_per_s: float = 1024.0  # a body arriving slower than this (averaged) is cut
    body_grace_s: float = 5.0  # before the rate is enforced
