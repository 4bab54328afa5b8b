"""Server configuration: one frozen value built from the command line or by tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from app.wire.api import AuthMode
from server.config.limits import Limits
from server.config.providers import ProviderSettings
from server.config.tools import (
    DEFAULT_APPROVAL_TIMEOUT_S,
    DEFAULT_CLIENT_TOOL_TIMEOUT_S,
    McpSettings,
)

__all__ = ["DEFAULT_MAX_MODEL_CALLS", "LOOPBACK_PROXIES", "REPO_ROOT", "Config", "Limits"]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MAX_MODEL_CALLS = 8
LOOPBACK_PROXIES = ("127.0.0.1", "::1")


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
    trusted_proxies: tuple[str, ...] = LOOPBACK_PROXIES  # peers whose user header counts
    allowed_origins: tuple[str, ...] = ()
    public_urls: tuple[str, ...] = ()  # where users reach it: their names pass the Host check
    # COEP on every response (with COOP): the page is cross-origin isolated, so Stop can
    # interrupt code in the page's sandbox and keep its state (SPEC §13)
    cross_origin_isolation: bool = True
    shutdown_grace_s: float = 10.0
    redis_url: str | None = None  # several processes share runs through it (server.runs.bus)
    mcp: tuple[McpSettings, ...] = ()  # MCP servers whose tools models may call (SPEC §12)
    approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S  # no decision by then is a denial
    # no page's result by then: the model is told (SPEC §13)
    client_tool_timeout_s: float = DEFAULT_CLIENT_TOOL_TIMEOUT_S
    lease_s: float = 5.0  # a run's owner must renew its lease within this; then it is lost
