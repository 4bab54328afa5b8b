"""Server configuration: one frozen value built from the command line or by tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from app.wire.api import AuthMode
from server.config.providers import ProviderSettings
from server.config.tools import DEFAULT_APPROVAL_TIMEOUT_S, McpSettings

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MAX_MODEL_CALLS = 8


@dataclass(frozen=True, slots=True)
class Limits:
    """Size and type limits of uploads and request bodies."""

    attachment_max_bytes: int = 5 * 1024 * 1024
    attachment_ttl_s: float = 24 * 3600.0
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
    runs_per_user: int = 4  # concurrent runs; more is 429 too_many_runs
    json_max_depth: int = 64


@dataclass(frozen=True, slots=True)
class Config:
    """Everything the server needs to know at start-up."""

    host: str = "127.0.0.1"
    port: int = 8000
    db_path: str = ":memory:"
    test_hooks: bool = False
    keepalive_s: float = 15.0
    retention_s: float = 3600.0
    orphan_s: float = 120.0
    demo_token_ms: float = 30.0
    coalesce_ms: float = 50.0  # deltas merged per window (server.runs.coalesce); 0: one per token
    static_root: Path = REPO_ROOT
    access_log: str | None = None
    cancel_wait_s: float = 2.0
    accept_wait_s: float = 20.0  # longest wait for a provider before the stream opens anyway
    sweep_interval_s: float = 30.0
    context_window_tokens: int = 900
    limits: Limits = field(default_factory=Limits)
    providers: tuple[ProviderSettings, ...] = ()
    max_model_calls: int = DEFAULT_MAX_MODEL_CALLS
    auth: AuthMode = "anonymous"
    trusted_user_header: str | None = None
    allowed_origins: tuple[str, ...] = ()
    shutdown_grace_s: float = 10.0
    redis_url: str | None = None  # several processes share runs through it (server.runs.bus)
    mcp: tuple[McpSettings, ...] = ()  # MCP servers whose tools models may call (SPEC §12)
    approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S  # no decision by then is a denial
    lease_s: float = 5.0  # a run's owner must renew its lease within this; then it is lost
