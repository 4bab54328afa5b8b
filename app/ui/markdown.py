"""Markdown to safe HTML: CommonMark (markdown-it-py) with raw HTML off and a URL allow-list.

Links and images may only use ``http:``, ``https:`` or ``mailto:``; images may also be
``data:image/png|jpeg|gif|webp``. Links open in a new tab with ``rel="noopener noreferrer"``.
An unclosed code fence already renders as code (CommonMark closes it at the end of input), so a
streaming answer never shows a paragraph that later flips into a code block.

- Code: fenced and indented code become :func:`app.ui.code.code_block_html` (a language label,
  and a Copy button once the block is finished).
- Math (mdit-py-plugins): ``$…$`` and ``\\(…\\)`` inline; ``$$…$$`` and ``\\[…\\]`` display. The
  TeX stays as escaped text of ``<span class="math" data-math="inline">``, of
  ``<div class="math" data-math="display">`` on lines of its own, or of
  ``<span class="math" data-math="display">`` inside a paragraph; the page typesets it (KaTeX).
- Streaming: :func:`split_blocks` cuts finished top-level blocks from the open one;
  :func:`with_cursor` puts the cursor at the end of the open block's innermost last element.

The parsers (markdown-it-py and its plugins, :mod:`app.ui.markdown_parser`) are imported on
first use, not with this module: a first visit's boot does not pay for them (~60 to 110 ms in the
browser); the page loads them in an idle moment after it is ready (:func:`load_parser`).
"""

from __future__ import annotations

import re

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


# NOTE: every token type dollarmath and texmath (any delimiters, any options) can emit, even
# those the parser's options never produce: a math token without a rule would render as <math>.
INLINE_MATH_TOKENS = ("math_inline", "math_single")
DISPLAY_MATH_TOKENS = ("math_inline_double", "math_block", "math_block_eqno", "math_block_label")


# NOTE: a first render runs code paths no render has run yet in this page (a restored page's
# heap has the parsers imported, never run): done when idle, not in an answer's first frame.
_WARM_UP = "# A\n\n*Text*, `code`, [a link](https://example.com).\n\n- one\n\n```py\nx = 1\n```\n"


def load_parser() -> None:
    """Import the parsers now (the page calls this when idle), not at the first answer, and
    run them once."""
    import app.ui.markdown_parser

    app.ui.markdown_parser.render(_WARM_UP)
    app.ui.markdown_parser.split_blocks(_WARM_UP)


def render_markdown(text: str, *, finished: bool = True) -> str:
    """Safe HTML for ``text``; ``finished=False`` while the text may still grow (no Copy)."""
    from app.ui.markdown_parser import render

    return render(text, finished=finished)


def split_blocks(text: str) -> tuple[str, str]:
    """Split ``text`` into (finished top-level blocks, the open last block): see
    :func:`app.ui.markdown_parser.split_blocks`."""
    from app.ui.markdown_parser import split_blocks as split

    return split(text)


# --- the open block: markup a cut text leaves unclosed --------------------------------------------

_FENCE = re.compile(r"\A {0,3}(?:```|~~~)")
_CODE_RUN = re.compile(r"`+")
_LINK_AT_END = re.compile(r"(!?)\[([^\]\n]*)(?:\]\([^)\n]*)?\Z")
_MARKER_AT_END = re.compile(r"(?:\A|(?<=\s))[*~`_]+\Z")
_BULLET = re.compile(r"^([ \t]*)\*(?=[ \t])", re.MULTILINE)
_PAIRED = (("**", re.compile(r"\*\*")), ("~~", re.compile(r"~~")))
_SINGLE_STAR = re.compile(r"(?<!\*)\*(?!\*)")


def close_open_markup(block: str) -> str:
    """``block`` (the last block of a text that stopped growing mid-way, or has not finished
    yet) with the inline markup it leaves open closed, as the writer meant it: ``**bold`` is
    bold, ```code`` is code, a link cut in its address is its words, a marker alone at the end
    is dropped. A fenced code block is left alone (CommonMark already closes it).

    NOTE: only delimiters that open emphasis (a character other than a space after them) count:
    ``2 * 3`` and a ``* bullet`` are not emphasis. Underscores are left alone (``snake_case``).
    """
    if _FENCE.match(block):
        return block
    trimmed = block.rstrip()
    text = _LINK_AT_END.sub(lambda m: "" if m.group(1) else m.group(2), trimmed)
    text = _MARKER_AT_END.sub("", text).rstrip()
    plain, open_code = _outside_code(text)
    if open_code:
        return text + open_code
    closers = ""
    for marker, pattern in _PAIRED:
        found = list(pattern.finditer(plain))
        if len(found) % 2 and _opens(plain, found[-1].end()):
            closers = marker + closers
    singles = list(_SINGLE_STAR.finditer(_BULLET.sub(r"\1 ", plain.replace("**", "  "))))
    if len(singles) % 2 and _opens(plain, singles[-1].end()):
        closers = "*" + closers
    return block if text == trimmed and not closers else text + closers


def _outside_code(text: str) -> tuple[str, str]:
    """``text`` with its code spans blanked out, and the backticks that would close a span
    still open at the end ("" when none is)."""
    pieces, at, opened = [], 0, None
    for run in _CODE_RUN.finditer(text):
        if opened is None:
            pieces.append(text[at : run.start()])
            opened = run
        elif len(run.group()) == len(opened.group()):
            pieces.append(" " * (run.end() - opened.start()))
            opened = None
            at = run.end()
    if opened is not None:
        return "".join(pieces), opened.group()
    return "".join(pieces) + text[at:], ""


def _opens(text: str, end: int) -> bool:
    """The delimiter ending at ``end`` is followed by a character other than a space."""
    return end < len(text) and not text[end].isspace()


# --- the streaming cursor -----------------------------------------------------------------------

CURSOR = '<span class="cursor" aria-hidden="true"></span>'
_CLOSING_RUN = re.compile(r"(?:</[a-z][a-z0-9]*>\s*)+\Z")
_MATH_TEXT_AT_END = re.compile(r'<(?:span|div) class="math"[^>]*>[^<]*\Z')


def with_cursor(html: str) -> str:
    """``html`` with :data:`CURSOR` at the end of its innermost last element (or at the end)."""
    closing = _CLOSING_RUN.search(html)
    at = closing.start() if closing else len(html)
    if _MATH_TEXT_AT_END.search(html, 0, at):
        # NOTE: not inside math: its text is TeX, which the page replaces when typesetting it.
        at = html.index(">", at) + 1
    return html[:at] + CURSOR + html[at:]
