"""Which providers and models the server talks to: a TOML file or the command line.

    python -m server --provider openai-chat --base-url http://127.0.0.1:11434/v1 \\
        --model qwen2.5:0.5b [--model …] [--api-key-env NAME]
    python -m server --config riacho.toml          # several providers (riacho.example.toml)

Settings are validated with pydantic (unknown keys are refused, so a typo is an error at
start-up, not a silently ignored option). API keys are read from the environment variable a
provider names; the key itself is never part of the settings, the logs or ``/api/models``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from server.config.tools import DEFAULT_APPROVAL_TIMEOUT_S, McpSettings, check_unique_names

ProviderKind = Literal["openai-chat", "openai-responses", "anthropic", "google"]
PROVIDER_KINDS: tuple[ProviderKind, ...] = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "google",
)
# NOTE: a sensible context window per kind when the file does not say (local OpenAI-compatible
# servers run small windows; configure the real one per model).
DEFAULT_CONTEXT_WINDOW: dict[ProviderKind, int] = {
    "openai-chat": 32_768,
    "openai-responses": 128_000,
    "anthropic": 200_000,
    "google": 1_048_576,
}
DEFAULT_KEY_ENV: dict[ProviderKind, str] = {
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GEMINI_API_KEY",
}
_STRICT = ConfigDict(extra="forbid", frozen=True)


class SettingsError(ValueError):
    """Provider settings that cannot be used; the message says what to fix."""


class ModelSettings(BaseModel):
    """One model of a provider, as offered in ``GET /api/models``."""

    model_config = _STRICT

    id: str = Field(min_length=1, max_length=200)
    label: str | None = None
    context_window: int | None = Field(default=None, gt=0)
    max_output_tokens: int = Field(default=8192, gt=0)
    supports_thinking: bool | None = None
    supports_tools: bool = True
    system: str | None = None


class ProviderSettings(BaseModel):
    """One provider endpoint and the models it serves."""

    model_config = _STRICT

    kind: ProviderKind
    name: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    api_version: str | None = None  # google only: "v1beta", "v1", …
    connect_timeout_s: float = Field(default=10.0, gt=0)
    first_byte_timeout_s: float = Field(default=60.0, gt=0)
    idle_timeout_s: float = Field(default=120.0, gt=0)
    models: tuple[ModelSettings, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _google_only_api_version(self) -> ProviderSettings:
        if self.api_version is not None and self.kind != "google":
            raise ValueError("api_version applies to kind = 'google' only")
        return self

    @property
    def key_env(self) -> str | None:
        """The environment variable holding the key (``None``: no key needed)."""
        if self.api_key_env is not None:
            return self.api_key_env
        if self.kind == "openai-chat" and self.base_url is not None:
            return None  # NOTE: local OpenAI-compatible servers (Ollama, llama.cpp) need none.
        return DEFAULT_KEY_ENV[self.kind]

    def api_key(self) -> str | None:
        """The key from the environment (``None`` when it is not set or none is needed)."""
        name = self.key_env
        return os.environ.get(name) or None if name else None

    def missing_key(self) -> str | None:
        """Why this provider cannot be used now, or ``None``."""
        name = self.key_env
        if name is not None and not os.environ.get(name):
            return f"the environment variable {name} holding the API key is not set"
        return None

    def context_window(self, model: ModelSettings) -> int:
        return model.context_window or DEFAULT_CONTEXT_WINDOW[self.kind]

    def supports_thinking(self, model: ModelSettings) -> bool:
        if model.supports_thinking is not None:
            return model.supports_thinking
        return self.kind != "openai-chat"

    def label(self, model: ModelSettings) -> str:
        return model.label or f"{model.id} ({self.name or self.kind})"


class ProvidersFile(BaseModel):
    """The ``--config`` TOML file: ``[[providers]]`` tables with ``[[providers.models]]``, and
    ``[[mcp]]`` tables (the MCP servers whose tools models may call: server/config/tools.py)."""

    model_config = _STRICT

    max_model_calls: int | None = Field(default=None, ge=1, le=50)
    public_urls: tuple[Annotated[str, Field(pattern=r"^https?://[^/?#]+")], ...] = ()
    approval_timeout_s: float = Field(default=DEFAULT_APPROVAL_TIMEOUT_S, gt=0)
    providers: tuple[ProviderSettings, ...] = ()
    mcp: tuple[McpSettings, ...] = ()

    @model_validator(mode="after")
    def _something_configured(self) -> ProvidersFile:
        if not self.providers and not self.mcp:
            raise ValueError("name at least one [[providers]] or [[mcp]] table")
        check_unique_names(self.mcp)
        return self


def load_file(path: Path) -> ProvidersFile:
    """Read and validate a TOML settings file; ``SettingsError`` says what is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path} is not valid TOML: {exc}") from exc
    try:
        return ProvidersFile.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(f"{path}: {_explain(exc)}") from exc


def from_command_line(
    kind: str, models: list[str], base_url: str | None, api_key_env: str | None
) -> ProviderSettings:
    """The one provider given by ``--provider``/``--model``/``--base-url``/``--api-key-env``."""
    try:
        return ProviderSettings.model_validate(
            {
                "kind": kind,
                "base_url": base_url,
                "api_key_env": api_key_env,
                "models": [{"id": model} for model in models],
            }
        )
    except ValidationError as exc:
        raise SettingsError(_explain(exc)) from exc


def check_unique_ids(providers: tuple[ProviderSettings, ...], taken: set[str]) -> None:
    """Model ids are what the browser sends: each must name exactly one model."""
    seen = set(taken)
    for provider in providers:
        for model in provider.models:
            if model.id in seen:
                raise SettingsError(f"model id {model.id!r} is configured twice")
            seen.add(model.id)


def _explain(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'settings'}: {error['msg']}"
        for error in exc.errors(include_url=False)
    )
