"""The chat's code settings under a run's output panel (SPEC §13), pure HTML: the time limit of
each run in this chat, and whether the model's code runs without asking."""

from __future__ import annotations

from app.state.client_tool import TIME_LIMITS_S, CodeSettings


def settings_html(settings: CodeSettings) -> str:
    """The settings' controls (``select[name=code-time-limit]``, ``[name=auto-run-code]``)."""
    options = "".join(
        f'<option value="{seconds}"'
        f"{' selected' if seconds * 1000 == settings.time_limit_ms else ''}>{seconds} s</option>"
        for seconds in TIME_LIMITS_S
    )
    checked = " checked" if settings.auto_run else ""
    return (
        '<div class="code-settings">'
        f'<label>Time limit per run in this chat <select name="code-time-limit">{options}'
        "</select></label>"
        f'<label><input type="checkbox" name="auto-run-code"{checked}>'
        " Run the model's code automatically in this chat</label></div>"
    )
