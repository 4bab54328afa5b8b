"""The models the demo server offers (``GET /api/models``)."""

from __future__ import annotations

from dataclasses import dataclass

from app.api import ModelInfo

DEFAULT_MODEL_ID = "riacho-demo"
RETRY_AFTER_S = 30


@dataclass(frozen=True, slots=True)
class DemoModel:
    """One model: its public info and how the demo plays it."""

    info: ModelInfo
    pace: float  # multiplier of --demo-token-ms
    brief: bool  # shorter answers


MODELS: tuple[DemoModel, ...] = (
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
            label="Riacho Offline (unavailable)",
            available=False,
            supports_thinking=True,
            supports_tools=True,
        ),
        pace=1.0,
        brief=False,
    ),
)


def find_model(model_id: str) -> DemoModel | None:
    """The model with that id, if any."""
    return next((model for model in MODELS if model.info.id == model_id), None)
