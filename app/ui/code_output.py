"""The output panel of a code block's run (SPEC §13): pure HTML from :class:`CodeRunState`.

``[data-code-output]`` carries ``data-run-state`` (the run's status) and its words; stdout and
stderr are separate spans (``data-stream``) in one ``<pre>``, so their order is kept; a
traceback follows in its own block; files written under ``/mnt/out/`` are links
(``[data-code-file]``) whose URLs the shell supplies, PNG and SVG images also shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from app.state.code_run import CodeRunState, words

SHOWN_IMAGES = frozenset({"image/png", "image/svg+xml"})
STOP_BUTTON = '<button type="button" class="stop-code" data-action="stop-code">Stop</button>'


def output_html(state: CodeRunState, file_urls: Mapping[str, str] | None = None) -> str:
    """The inside of ``[data-code-output]`` for ``state`` (the element's attributes are the
    shell's: :func:`output_attributes`)."""
    urls = file_urls or {}
    stop = "" if state.finished else STOP_BUTTON
    parts = [
        f'<div class="code-run-head"><span class="code-run-state" role="status">'
        f"{escape(words(state))}</span>{stop}</div>"
    ]
    if state.output:
        spans = "".join(
            f'<span data-stream="{chunk.stream}">{escape(chunk.text, quote=False)}</span>'
            for chunk in state.output
        )
        parts.append(f'<pre class="code-run-output" tabindex="0">{spans}</pre>')
    if state.traceback:
        parts.append(
            '<pre class="code-run-traceback" data-stream="traceback" tabindex="0">'
            f"{escape(state.traceback, quote=False)}</pre>"
        )
    parts.extend(_file_html(name, mime, urls.get(name)) for name, mime in _files(state))
    return "".join(parts)


def _files(state: CodeRunState) -> list[tuple[str, str]]:
    return [(file.name, file.mime) for file in state.files]


def _file_html(name: str, mime: str, url: str | None) -> str:
    if url is None:
        return ""
    label, href = escape(name), escape(url)
    image = (
        f'<img class="code-run-image" src="{href}" alt="{label}">' if mime in SHOWN_IMAGES else ""
    )
    return (
        f'<figure class="code-run-file">{image}<figcaption><a data-code-file="{label}" '
        f'href="{href}" download="{label}">Download {label}</a></figcaption></figure>'
    )


def output_attributes(state: CodeRunState) -> dict[str, str]:
    """The attributes of ``[data-code-output]`` for ``state``."""
    attributes: dict[str, str] = {"data-run-state": state.status}
    if state.limit is not None:
        attributes["data-limit"] = state.limit
    if state.state_kept is not None:
        attributes["data-state-kept"] = "true" if state.state_kept else "false"
    return attributes
