"""A user's settings (``GET/PATCH /api/settings``, SPEC §14): the page's theme and what a new
chat starts with. Kept per user on the server and on the device (the theme is applied from
the device's copy before the page's first paint: static/theme.js).

``PATCH`` takes any subset of the fields; an unknown field or a wrong value is refused whole
(``400 invalid_body``, naming the field), so nothing of a bad request is kept.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from app.wire.protocol import CAMEL_CONFIG

Theme = Literal["system", "light", "dark"]
THEMES: tuple[Theme, ...] = ("system", "light", "dark")
THEME_WORDS: dict[Theme, str] = {"system": "System", "light": "Light", "dark": "Dark"}


class Settings(BaseModel):
    """The settings as stored and answered (every field has its default)."""

    model_config = CAMEL_CONFIG

    theme: Theme = "system"
    default_model_id: str | None = None  # a new chat's model (``None``: the first available)
    default_thinking: bool = False  # a new chat starts with Thinking on
    default_tools: bool = False  # a new chat starts with Tools on


class SettingsPatch(BaseModel):
    """A ``PATCH /api/settings`` body: strict, nothing unknown."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="forbid",
        strict=True,
        frozen=True,
    )

    theme: Theme | None = None
    default_model_id: str | None = Field(default=None, min_length=1, max_length=200)
    default_thinking: bool | None = None
    default_tools: bool | None = None

    def applied_to(self, settings: Settings) -> Settings:
        """``settings`` with this patch's fields (those sent) in place."""
        sent = self.model_dump(exclude_unset=True)
        return settings.model_copy(update=sent)
