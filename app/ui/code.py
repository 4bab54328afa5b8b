"""Code blocks: their markup (a language label, a copy button once finished) and highlighting.

:func:`code_block_html` is what the markdown renderer emits for fenced and indented code; the
code is always escaped text. :func:`highlight` turns code into Pygments token spans (coloured by
``static/code.css``); Pygments is optional, because the browser loads it lazily after boot, so it
is imported only when :func:`highlight` runs, and :func:`available` says whether it can be.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Iterator
from html import escape
from typing import Any

RUNNABLE = frozenset({"python", "py", "python3"})
RUN_BUTTON = (
    '<button type="button" class="run-code" data-action="run-code" aria-label="Run code">'
    "Run</button>"
)
LANGUAGE = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")
COPY_BUTTON = (
    '<button type="button" class="copy-code" data-action="copy-code" aria-label="Copy code">'
    "Copy</button>"
)


def language_of(info: str) -> str | None:
    """The language a fence's info string names: its first word, if it looks like a name."""
    words = info.split()
    # NOTE: any other first word (quotes, brackets, `{.py}`, a 2 kB word) means no language at
    # all, not an escaped label: the name goes into a class and a data attribute and is looked
    # up as a lexer, so it must be a plain name.
    if words and LANGUAGE.fullmatch(words[0]):
        return words[0]
    return None


def code_block_html(code: str, info: str, *, finished: bool) -> str:
    """A code block: a head with the language ("text" if none) and, once finished, Copy."""
    language = language_of(info)
    label = escape(language or "text")
    attributes = f' class="language-{label}" data-lang="{label}"' if language else ""
    # NOTE: no Copy while the block is still streaming: it would copy half the code.
    button = COPY_BUTTON if finished else ""
    # NOTE: Run only on a finished Python block (SPEC §13): half the code would not run
    if finished and language is not None and language.lower() in RUNNABLE:
        button = RUN_BUTTON + button
    return (
        f'<div class="code-block"><div class="code-head"><span class="code-lang">{label}</span>'
        f"{button}</div>"
        # NOTE: tabindex: a scrollable region must be reachable from the keyboard (axe).
        f'<pre tabindex="0"><code{attributes}>{escape(code, quote=False)}</code></pre></div>\n'
    )


def available() -> bool:
    """Whether Pygments can be imported (in the browser: once it has been loaded)."""
    return importlib.util.find_spec("pygments") is not None


def _lexer_class(language: str) -> Any:
    """Pygments' own lexer class for the alias ``language`` (any case), or None.

    NOTE: built-in lexers only. Pygments' lookup by name also asks every installed package for
    plugin lexers when a name is unknown (an entry-point scan of all package metadata): there
    are none in the page, and the scan is slow where there are many packages.
    """
    lexers = importlib.import_module("pygments.lexers")
    alias = language.lower()
    for name, aliases, _patterns, _mimetypes in lexers.get_all_lexers(plugins=False):
        if alias in aliases:
            return lexers.find_lexer_class(name)
    return None


def preparation(language: str) -> Iterator[None]:
    """The work that makes the first :func:`highlight` of ``language`` cheap, in small steps.

    A caller resumes it once per task (the browser paints in between): Pygments' modules are
    imported one at a time, then the lexer's token definitions are compiled one state at a time
    (Pygments does that at a lexer's first instantiation, all at once: ~40 ms in the browser for
    Python). Yields nothing when ``language`` is prepared already, unknown, or Pygments absent.
    """
    if not available():
        return
    for name in ("pygments", "pygments.formatters", "pygments.lexers"):
        if name not in sys.modules:
            importlib.import_module(name)
            yield
    lexer_class = _lexer_class(language)
    if lexer_class is None:
        return
    # NOTE: what RegexLexerMeta.__call__ does at a first instantiation, split per state; a lexer
    # with token variants or no regex states (or any other shape) is left to that call.
    if "_tokens" in vars(lexer_class) or getattr(lexer_class, "token_variants", False):
        return
    yield
    try:
        definitions = lexer_class.get_tokendefs()
        process_state = lexer_class._process_state
    except AttributeError:
        return
    processed: dict[str, object] = {}
    lexer_class._all_tokens = {"": processed}
    lexer_class._tmpname = 0
    # NOTE: the last states first: a state that includes others (``root``) then finds them
    # compiled, instead of compiling all of them in its own step.
    for state in reversed(list(definitions)):
        process_state(definitions, processed, state)
        yield
    lexer_class._tokens = processed


def highlight(code: str, language: str) -> str | None:
    """Pygments token spans for ``code`` (no wrapping element); None without Pygments or lexer."""
    if not available():
        return None
    # NOTE: imported here, not at the top: boot must not pay for Pygments (the browser loads it
    # later). import_module, because every import statement in app/ is at module level.
    pygments = importlib.import_module("pygments")
    formatters = importlib.import_module("pygments.formatters")
    lexer_class = _lexer_class(language)
    if lexer_class is None:
        return None
    # NOTE: stripnl/ensurenl off: the spans hold exactly ``code``, blank lines and all.
    lexer = lexer_class(stripnl=False, ensurenl=False)
    spans = str(pygments.highlight(code, lexer, formatters.HtmlFormatter(nowrap=True)))
    # NOTE: the formatter ends every line with a newline, the last one too.
    return spans if code.endswith("\n") else spans.removesuffix("\n")
