"""The markdown-it parsers behind :mod:`app.ui.markdown`, and their rules.

CommonMark (markdown-it-py) with tables and strikethrough, raw HTML off; links and images
checked against :mod:`app.ui.markdown`'s allow-list; code blocks as
:func:`app.ui.code.code_block_html`; math from mdit-py-plugins. Imported on first use (it is
the heaviest import of the view), never by :mod:`app.ui.markdown` at import time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml, unescapeAll
from markdown_it.renderer import RendererHTML
from markdown_it.rules_block import StateBlock
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.texmath.index import RuleDictType, make_inline_func, rules

from app.ui.code import code_block_html
from app.ui.markdown import DISPLAY_MATH_TOKENS, INLINE_MATH_TOKENS, is_safe_image, is_safe_link


def _validate_link(url: str) -> bool:
    # NOTE: markdown-it asks this for links and images alike; the image rule narrows it below.
    return is_safe_link(url) or is_safe_image(url)


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


def _render_code(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    finished = bool(env.get("finished", True))
    return code_block_html(token.content, unescapeAll(token.info), finished=finished)


# --- math ---------------------------------------------------------------------------------------


_BRACKET_INLINE = rules["brackets"]["inline"][0]  # texmath's \(…\)
_BRACKET_DISPLAY_INLINE: RuleDictType = {
    "name": "math_inline_double",  # \[…\] inside a paragraph, like $$…$$ there
    "rex": re.compile(r"^\\\[(.+?)\\\]", re.DOTALL),
    "tmpl": "",
    "tag": "\\[",
}


def _add_math(md: MarkdownIt) -> None:
    # NOTE: pandoc's rule for `$`: no space just inside the dollars and no digit just after the
    # closing one, so "$5 and $10" stays text. Blank lines end display math (as in LaTeX), so a
    # blank line stays a block boundary for split_blocks. A label after `$$…$$` stays text.
    dollarmath_plugin(
        md,
        allow_space=False,
        allow_digits=False,
        allow_blank_lines=False,
        allow_labels=False,
        double_inline=True,
    )
    # NOTE: texmath_plugin(md, delimiters="brackets") is not called: its \[…\] block rule drops
    # any text after `\]` on its line, takes an equation label from a later line (even past a
    # blank one) and leaves no line map. Its \(…\) rule is used as is; \[…\] follows
    # dollarmath's rules for $$…$$ (_bracket_math_block, and inline as above).
    md.inline.ruler.before("escape", "math_inline_bracket", make_inline_func(_BRACKET_INLINE))
    md.inline.ruler.before(
        "escape", "math_display_bracket", make_inline_func(_BRACKET_DISPLAY_INLINE)
    )
    md.block.ruler.before("fence", "math_block_bracket", _bracket_math_block)
    for token_type in INLINE_MATH_TOKENS + DISPLAY_MATH_TOKENS:
        md.add_render_rule(token_type, _render_math)


def _render_math(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    mode = "inline" if token.type in INLINE_MATH_TOKENS else "display"
    tag = "div" if token.block else "span"
    # NOTE: an equation label (math_block_eqno/_label) is never parsed with the options above.
    tex = escapeHtml(token.content.strip())
    line_end = "\n" if token.block else ""
    return f'<{tag} class="math" data-math="{mode}">{tex}</{tag}>{line_end}'


def _line_text(state: StateBlock, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]


def _bracket_math_block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """``\\[ … \\]`` display math on lines of its own: closed by a line ending in ``\\]``."""
    opening = _line_text(state, start_line).rstrip()
    if state.is_code_block(start_line) or not opening.startswith("\\["):
        return False
    last = _closing_line(state, start_line, end_line)
    if last is None:
        return False
    if not silent:
        token = state.push("math_block", "math", 0)
        token.block = True
        token.content = state.getLines(start_line, last + 1, state.blkIndent, False).strip()[2:-2]
        token.markup = "\\["
        token.map = [start_line, last + 1]
    state.line = last + 1
    return True


def _closing_line(state: StateBlock, start_line: int, end_line: int) -> int | None:
    """The line closing the ``\\[`` opened on ``start_line``; None if a blank line comes first."""
    rest = _line_text(state, start_line).rstrip()[2:]
    if rest.endswith("\\]"):
        return start_line
    if "\\]" in rest:
        return None  # NOTE: text after `\]`: a paragraph, with inline display math
    for line in range(start_line + 1, end_line):
        if state.isEmpty(line):
            return None
        if _line_text(state, line).rstrip().endswith("\\]"):
            return line
    return None


# --- the parser ---------------------------------------------------------------------------------


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.enable("strikethrough")
    md.validateLink = _validate_link  # type: ignore[method-assign]
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("image", _render_image)
    md.add_render_rule("fence", _render_code)
    md.add_render_rule("code_block", _render_code)
    _add_math(md)
    return md


_MD = _parser()


def render(text: str, *, finished: bool = True) -> str:
    """Safe HTML for ``text``; ``finished=False`` while the text may still grow (no Copy)."""
    return str(_MD.render(text, {"finished": finished}))


# --- linear rendering: finished blocks and the open one ------------------------------------------


def _open_display_math(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """(split_blocks only) Display math that a line yet to come may close: one block to the end.

    NOTE: an unclosed ``$$``/``\\[`` line is a paragraph, which a list item or heading on the
    next line would interrupt; once closed, all of it is one math block. Only a blank line makes
    the paragraph final, since display math never spans one. (A line that can never open math,
    such as ``$$a$$ b``, is kept open too: merging blocks costs re-rendering, never correctness.)
    """
    if not _line_text(state, start_line).startswith(("$$", "\\[")):
        return False
    if any(state.isEmpty(line) for line in range(start_line + 1, end_line)):
        return False
    if not silent:
        state.push("open_display_math", "", 0).map = [start_line, end_line]
    state.line = end_line
    return True


def _block_parser() -> MarkdownIt:
    md = _parser()
    md.core.ruler.disable(["inline", "text_join"])  # NOTE: block structure only
    md.block.ruler.after("math_block_bracket", "open_display_math", _open_display_math)
    return md


_BLOCK_PARSER = _block_parser()
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
