"""The models the server offers (``GET /api/models``): configured provider models, then the demo.

With no provider configured the demo model is the default; otherwise the first configured
model is. Each provider gets one adapter (its SDK client), made once and closed at shutdown.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from app.wire.api import ModelInfo
from server.config.providers import ModelSettings, ProviderKind, ProviderSettings
from server.model.providers.base import Adapter, Timeouts

DEFAULT_MODEL_ID = "riacho-demo"
RETRY_AFTER_S = 30


@dataclass(frozen=True, slots=True)
class DemoModel:
    """One demo model: its public info and how the demo plays it."""

    info: ModelInfo
    pace: float  # multiplier of --demo-token-ms
    brief: bool  # shorter answers


@dataclass(frozen=True, slots=True)
class ProviderModel:
    """A model served by a real provider through its adapter."""

    info: ModelInfo
    provider: ProviderSettings
    settings: ModelSettings
    adapter: Adapter

    @property
    def context_window(self) -> int:
        return self.provider.context_window(self.settings)

    @property
    def timeouts(self) -> Timeouts:
        p = self.provider
        return Timeouts(p.connect_timeout_s, p.first_byte_timeout_s, p.idle_timeout_s)

    def unavailable_reason(self) -> str | None:
        return self.provider.missing_key()


Model = DemoModel | ProviderModel

DEMO_MODELS: tuple[DemoModel, ...] = (
    DemoModel(
        ModelInfo(
            id=DEFAULT_MODEL_ID,
            label="Riacho Demo",
            available=True,
            supports_thinking=True,
            supports_tools=True,
        ),
        pace=1.0,
        brief=False,
    ),
    DemoModel(
        ModelInfo(
            id="riacho-mini",
            label="Riacho Mini (fast)",
            available=True,
            supports_thinking=False,
            supports_tools=True,
        ),
        pace=0.5,
        brief=True,
    ),
    DemoModel(
        ModelInfo(
            id="riacho-offline",
            label="Riacho Offline",
            available=False,
            unavailable_reason="this demo model is always offline",
            supports_thinking=True,
            supports_tools=True,
        ),
        pace=1.0,
        brief=False,
    ),
)

_ADAPTER_MODULES: dict[ProviderKind, str] = {
    "openai-chat": "server.model.providers.openai_chat",
    "openai-responses": "server.model.providers.openai_responses",
    "anthropic": "server.model.providers.anthropic_messages",
    "google": "server.model.providers.google_gemini",
}


def make_adapter(settings: ProviderSettings) -> Adapter:
    """The adapter of one provider (its SDK is imported only when a provider uses it)."""
    module = importlib.import_module(_ADAPTER_MODULES[settings.kind])
    adapter: Adapter = module.make_adapter(settings)
    return adapter


class Catalog:
    """Every model the server offers, by id."""

    def __init__(self, providers: tuple[ProviderSettings, ...] = ()) -> None:
        self.adapters = [make_adapter(provider) for provider in providers]
        self.provider_models = tuple(
            _provider_model(provider, model, adapter)
            for provider, adapter in zip(providers, self.adapters, strict=True)
            for model in provider.models
        )
        self.models: tuple[Model, ...] = (*self.provider_models, *DEMO_MODELS)

    @property
    def default_id(self) -> str:
        return self.provider_models[0].info.id if self.provider_models else DEFAULT_MODEL_ID

    def find(self, model_id: str) -> Model | None:
        """The model with that id, if any."""
        return next((model for model in self.models if model.info.id == model_id), None)

    def infos(self) -> list[ModelInfo]:
        return [model.info for model in self.models]

    async def aclose(self) -> None:
        for adapter in self.adapters:
            await adapter.aclose()


def _provider_model(
    provider: ProviderSettings, model: ModelSettings, adapter: Adapter
) -> ProviderModel:
    info = ModelInfo(
        id=model.id,
        label=provider.label(model),
        available=provider.missing_key() is None,
        unavailable_reason=provider.missing_key(),
        supports_thinking=provider.supports_thinking(model),
        supports_tools=model.supports_tools,
        first_event_wait_ms=round(
            (provider.connect_timeout_s + provider.first_byte_timeout_s) * 1000
        ),
        idle_wait_ms=round(provider.idle_timeout_s * 1000),
    )
    return ProviderModel(info, provider, model, adapter)
