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


def split_blocks(text: str) -> tuple[str, str]:
    """Split ``text`` into (finished blocks, the open last block).

    NOTE: only a blank line outside a code fence ends a block for certain; everything after the
    last such line is the open block, re-rendered as it grows. Finished blocks never change, so
    they are rendered once.
    """
    in_fence = False
    fence = ""
    boundary = 0
    position = 0
    for line in text.split("\n")[:-1]:  # NOTE: the last piece has no line end yet
        position += len(line) + 1
        stripped = line.strip()
        marker = stripped[:3]
        if marker in ("```", "~~~") and (not in_fence or stripped.startswith(fence)):
            in_fence, fence = (not in_fence), marker
        elif not in_fence and stripped == "":
            boundary = position
    return text[:boundary], text[boundary:]
