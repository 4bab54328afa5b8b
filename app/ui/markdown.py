"""Markdown to safe HTML: CommonMark (markdown-it-py) with raw HTML off and a URL allow-list.

Links and images may only use ``http:``, ``https:`` or ``mailto:``; images may also be
``data:image/png|jpeg|gif|webp``. Links open in a new tab with ``rel="noopener noreferrer"``.
An unclosed code fence already renders as code (CommonMark closes it at the end of input), so a
streaming answer never shows a paragraph that later flips into a code block.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

_LINK_URL = re.compile(r"^(?:https?:|mailto:)", re.IGNORECASE)
_IMAGE_DATA_URL = re.compile(r"^data:image/(?:png|jpeg|gif|webp)[;,]", re.IGNORECASE)


def is_safe_link(url: str) -> bool:
    """Whether a link target may be rendered."""
    return bool(_LINK_URL.match(url.strip()))


def is_safe_image(url: str) -> bool:
    """Whether an image source may be rendered."""
    stripped = url.strip()
    return bool(_LINK_URL.match(stripped) and not stripped.lower().startswith("mailto:")) or bool(
        _IMAGE_DATA_URL.match(stripped)
    )


def _validate_link(url: str) -> bool:
    # NOTE: markdown-it asks this for links and images alike; the image rule narrows it below.
    return is_safe_link(url) or bool(_IMAGE_DATA_URL.match(url.strip()))


def _render_link_open(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    if not is_safe_link(str(token.attrGet("href") or "")):
        # NOTE: a data:image URL passed validation for images only; a link keeps its text.
        token.attrs.pop("href", None)
    token.attrSet("target", "_blank")
    token.attrSet("rel", "noopener noreferrer")
    return renderer.renderToken(tokens, idx, options, env)


def _render_image(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    if not is_safe_image(str(token.attrGet("src") or "")):
        return renderer.renderInline(token.children or [], options, env)
    return str(renderer.image(tokens, idx, options, env))


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.enable("strikethrough")
    md.validateLink = _validate_link  # type: ignore[method-assign]
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("image", _render_image)
    return md


_MD = _parser()


def render_markdown(text: str) -> str:
    """Safe HTML for ``text``."""
    return str(_MD.render(text))


_BLOCK_PARSER = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
_BLOCK_PARSER.core.ruler.disable(["inline", "text_join"])  # NOTE: block structure only
_LINE_END = re.compile(r"\r\n?|\n")  # the line ends markdown-it normalises


def split_blocks(text: str) -> tuple[str, str]:
    """Split ``text`` into (finished top-level blocks, the open last block).

    NOTE: the block structure is markdown-it's own (CommonMark), so fences of any length, list
    items with blank lines and indented continuations are never cut. A top-level block is
    finished once a *complete* line has begun another top-level block after it: CommonMark
    reads line by line and never reopens a closed block, but an unfinished line ("2" that
    becomes "2. item") may still join the block before it, so it is left out of the parse.
    """
    complete = text[: max(text.rfind("\n"), text.rfind("\r")) + 1]
    starts = [
        token.map[0]
        for token in _BLOCK_PARSER.parse(complete)
        if token.level == 0 and token.map is not None and token.nesting != -1
    ]
    if len(starts) < 2:
        return "", text
    offset = _line_offset(text, starts[-1])
    return text[:offset], text[offset:]


def _line_offset(text: str, line: int) -> int:
    """The index in ``text`` where line number ``line`` (0-based) begins."""
    if line == 0:
        return 0
    for number, match in enumerate(_LINE_END.finditer(text), start=1):
        if number == line:
            return match.end()
    return len(text)
