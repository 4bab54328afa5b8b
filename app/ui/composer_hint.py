"""The composer's hint, true to what Enter does: while an answer streams Enter sends nothing
(as in ChatGPT, the prompt waits in the box), so the hint says to wait or press Esc."""

from __future__ import annotations

HINT_WORDS = "Enter sends · Shift+Enter adds a line · Esc stops · ? lists shortcuts"
ANSWERING_HINT_WORDS = (
    "Answering: Enter sends once the answer ends · Esc stops it · Shift+Enter adds a line"
)
WAIT_WORDS = "Not sent: the answer is still coming. Wait for it, or press Esc to stop it."


def hint_words(*, answering: bool) -> str:
    """The hint under the message box."""
    return ANSWERING_HINT_WORDS if answering else HINT_WORDS


def options_on_words(*, thinking: bool, tools: bool) -> str:
    """What the phone's folded Options button says is on ("" when neither is)."""
    return " · ".join(name for name, on in (("Thinking", thinking), ("Tools", tools)) if on)
