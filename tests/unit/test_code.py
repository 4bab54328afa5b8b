"""Code blocks: markup, lazy Pygments highlighting, and the token colours of static/code.css."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.ui.code import (
    COPY_BUTTON,
    available,
    code_block_html,
    highlight,
    language_of,
    preparation,
)
from tests.unit.html_tree import parse_html

ROOT = Path(__file__).resolve().parents[2]

# --- markup -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("info", "language"),
    [
        pytest.param("python", "python", id="name"),
        pytest.param("  js  ", "js", id="surrounding-space"),
        pytest.param("py {linenos=true}", "py", id="first-word-only"),
        pytest.param("c++", "c++", id="plus"),
        pytest.param("c#", "c#", id="hash"),
        pytest.param("objective-c", "objective-c", id="dash"),
        pytest.param("vb.net", "vb.net", id="dot"),
        pytest.param("x" * 32, "x" * 32, id="longest-name"),
        pytest.param("", None, id="empty"),
        pytest.param("   ", None, id="blank"),
        pytest.param("x" * 33, None, id="too-long"),
        pytest.param('"><script>alert(1)</script>', None, id="markup"),
        pytest.param("py\"onclick='x'", None, id="quotes"),
        pytest.param("`x`", None, id="backticks"),
        pytest.param("{.python}", None, id="attribute-syntax"),
        pytest.param("pyth\u00f6n", None, id="non-ascii"),
    ],
)
def test_language_of_a_fence_info_string(info: str, language: str | None) -> None:
    assert language_of(info) == language


def test_code_block_holds_escaped_code_under_a_language_head() -> None:
    block = parse_html(code_block_html("if a < b && c:\n    '<script>'\n", "py", finished=True))

    code = block.one(tag="pre").one(tag="code")
    assert code.text == "if a < b && c:\n    '<script>'\n"
    assert code.find_all(tag="script") == []
    assert (code.get("class"), code.get("data-lang")) == ("language-py", "py")
    assert block.one("class", "code-lang").text == "py"
    assert block.one(tag="pre").get("tabindex") == "0"


@pytest.mark.parametrize(
    ("finished", "buttons"),
    [pytest.param(True, 1, id="finished"), pytest.param(False, 0, id="streaming")],
)
def test_copy_button_only_once_the_block_is_finished(finished: bool, buttons: int) -> None:
    block = parse_html(code_block_html("x = 1\n", "", finished=finished))

    assert len(block.find_all("data-action", "copy-code", tag="button")) == buttons
    assert (COPY_BUTTON in code_block_html("x", "", finished=finished)) is finished


def test_code_block_without_a_language_is_labelled_text_and_has_no_class() -> None:
    code = parse_html(code_block_html("x", '"><b>', finished=True))

    assert code.one("class", "code-lang").text == "text"
    assert not code.one(tag="code").has("class") and not code.one(tag="code").has("data-lang")


# --- highlight ----------------------------------------------------------------------------------

SAMPLES = {
    "python": '@dataclass\nclass A(B):\n    """Doc."""\n\n    def f(self, x: int = 0x1F) -> str:'
    '  # c\n        return f"{x!r}\\n" if x is not None else b""\n\nimport os\nprint(len([1.5]))\n',
    "javascript": "const a = `t ${x}`; // c\nfunction f(a) { return a?.b ?? null; }\n/* m */\n",
    "typescript": "interface A { x: number }\nexport type B = string | undefined;\n",
    "rust": 'fn main() { let x: u32 = 5; println!("{}", x); }\n#[derive(Debug)]\nstruct S;\n',
    "go": 'package main\nimport "fmt"\nfunc main() { var x int = 3; fmt.Println(x) }\n',
    "c": "#include <stdio.h>\nint main(void) { char c = 'a'; return 0; }\n",
    "bash": '#!/bin/bash\nfor i in $(seq 1 3); do echo "$i"; done\n',
    "json": '{"a": [1, 2.5, true, null], "b": "s"}\n',
    "html": '<!DOCTYPE html>\n<div class="a">x &amp; y</div><!-- c -->\n',
    "css": ".a > b { color: #fff; margin: 0 auto !important; }\n",
    "sql": "SELECT a, COUNT(*) FROM t WHERE b = 'x' GROUP BY a;\n",
    "diff": "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n",
    "java": 'public class A { @Override public String toString() { return "a"; } }\n',
    "yaml": 'a: 1\nb: [x, "y"]\n# c\n',
    "pycon": ">>> 1 + 1\n2\n",
    "console": "$ ls -la\ntotal 0\n",
}


def highlighted_text(spans: str) -> str:
    """The text the highlighted HTML shows."""
    return html.unescape(re.sub(r"<[^>]*>", "", spans))


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_highlight_keeps_exactly_the_code_text(language: str) -> None:
    spans = highlight(SAMPLES[language], language)

    assert spans is not None and '<span class="' in spans
    assert highlighted_text(spans) == SAMPLES[language]


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("\n\nx = 1\n\n", id="leading-and-trailing-blank-lines"),
        pytest.param("x = 1", id="no-final-newline"),
        pytest.param("", id="empty"),
    ],
)
def test_highlight_strips_no_blank_lines(code: str) -> None:
    spans = highlight(code, "python")

    assert spans is not None and highlighted_text(spans) == code


def test_highlight_has_no_wrapping_element() -> None:
    spans = highlight("x = 1\n", "python") or ""

    assert {element.tag for element in parse_html(spans).iter()} == {"span"}


@pytest.mark.parametrize(
    ("code", "language"),
    [
        pytest.param("s = '</code><script>alert(1)</script>'\n", "python", id="in-a-string"),
        pytest.param("<script>alert(1)</script>\n", "html", id="html-markup"),
        pytest.param("<img src=x onerror=alert(1)>", "text", id="plain-text"),
        pytest.param("a <script>x</script> ' \" &\n", "bash", id="quotes-and-ampersand"),
    ],
)
def test_highlight_escapes_markup_in_the_code(code: str, language: str) -> None:
    spans = highlight(code, language)

    assert spans is not None and "<script" not in spans and "<img" not in spans
    assert highlighted_text(spans) == code


@pytest.mark.parametrize(
    "language",
    [
        pytest.param("no-such-language", id="unknown"),
        pytest.param("", id="empty"),
        pytest.param('"><script>', id="markup"),
    ],
)
def test_highlight_without_a_lexer_is_none(language: str) -> None:
    assert highlight("x = 1\n", language) is None


def test_highlight_without_pygments_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pygments", None)  # NOTE: how an absent package looks

    assert available() is False
    assert highlight("x = 1\n", "python") is None


def test_rendering_markdown_does_not_import_pygments() -> None:
    """Boot pays only for the markdown renderer; Pygments comes later, on demand."""
    probe = "import sys, app.ui.markdown; print('pygments' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )

    assert result.stdout.strip() == "False"


# --- static/code.css ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rule:
    """One style rule: its media condition ("" at top level), selectors and declarations."""

    media: str
    selectors: tuple[str, ...]
    declarations: dict[str, str]


_MEDIA = re.compile(r"@media\s*([^{]+?)\s*\{((?:[^{}]*\{[^{}]*\})*)\s*\}")
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")


def parse_css(css: str) -> list[Rule]:
    """The rules of a stylesheet with no nesting deeper than ``@media``."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    found = [rule for media, body in _MEDIA.findall(css) for rule in _rules(body, media)]
    return _rules(_MEDIA.sub("", css), "") + found


def _rules(css: str, media: str) -> list[Rule]:
    return [
        Rule(
            media,
            tuple(" ".join(selector.split()) for selector in selectors.split(",")),
            {
                name.strip(): value.strip()
                for name, _, value in (d.partition(":") for d in body.split(";") if d.strip())
            },
        )
        for selectors, body in _RULE.findall(css)
    ]


def contrast(foreground: str, background: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours."""
    lighter, darker = sorted((_luminance(foreground), _luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


CSS = parse_css((ROOT / "static" / "code.css").read_text(encoding="utf-8"))
SCHEMES = {  # name: (media condition, selector of the rule setting its palette)
    "light": ("", ".code-block"),
    "dark": ("(prefers-color-scheme: dark)", ".code-block"),
}
BACKGROUNDS = {"light": "#f4f5f7", "dark": "#0f1419"}
HEX = re.compile(r"#[0-9a-fA-F]{6}")
COLOUR_LITERAL = re.compile(r"#[0-9a-fA-F]{3,8}\b|\b(?:rgb|rgba|hsl|hsla|hwb|lab|lch|oklch)\(")


def palette(scheme: str) -> dict[str, str]:
    """The ``--hl-*`` custom properties the scheme's rule sets."""
    media, selector = SCHEMES[scheme]
    (rule,) = [r for r in CSS if r.media == media and r.selectors == (selector,)]
    return rule.declarations


def token_rules() -> list[Rule]:
    """Every rule but the palettes."""
    palettes = {(media, (selector,)) for media, selector in SCHEMES.values()}
    return [rule for rule in CSS if (rule.media, rule.selectors) not in palettes]


PALETTE_COLOURS = [
    pytest.param(scheme, name, value, id=f"{scheme}{name.removeprefix('-')}")
    for scheme in SCHEMES
    for name, value in palette(scheme).items()
    if name != "--hl-bg"
]


@pytest.mark.parametrize(
    ("foreground", "background", "ratio"),
    [
        pytest.param("#000000", "#ffffff", 21.0, id="black-on-white"),
        pytest.param("#ffffff", "#000000", 21.0, id="order-does-not-matter"),
        pytest.param("#777777", "#ffffff", 4.48, id="grey-just-below-aa"),
        pytest.param("#123456", "#123456", 1.0, id="same"),
    ],
)
def test_contrast_is_the_wcag_ratio(foreground: str, background: str, ratio: float) -> None:
    assert contrast(foreground, background) == pytest.approx(ratio, abs=0.01)


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_each_scheme_sets_the_code_block_background(scheme: str) -> None:
    assert palette(scheme)["--hl-bg"].lower() == BACKGROUNDS[scheme]


@pytest.mark.parametrize(("scheme", "name", "value"), PALETTE_COLOURS)
def test_every_colour_contrasts_with_its_background(scheme: str, name: str, value: str) -> None:
    assert HEX.fullmatch(value), f"{name}: {value} is not #rrggbb"
    assert contrast(value, palette(scheme)["--hl-bg"]) >= 4.5, f"{scheme} {name} {value}"


def test_every_scheme_sets_the_same_colours() -> None:
    assert palette("light").keys() == palette("dark").keys()


def test_token_rules_use_only_palette_colours() -> None:
    """A colour written anywhere else would escape the contrast check."""
    defined = palette("light").keys()
    for rule in token_rules():
        for name, value in rule.declarations.items():
            assert not COLOUR_LITERAL.search(value), f"{rule.selectors}: {name}: {value}"
            for used in re.findall(r"var\((--[\w-]+)\)", value):
                assert used in defined, f"{rule.selectors}: {used} is not in the palette"


def test_token_rules_are_scoped_to_code_blocks() -> None:
    for rule in token_rules():
        assert all(s.startswith(".code-block ") for s in rule.selectors), rule.selectors


def test_a_token_kind_is_told_apart_by_colour_not_only_by_style() -> None:
    # NOTE: generic emphasis and strong are the text's own emphasis, not a kind of token.
    for rule in token_rules():
        if {"font-style", "font-weight"} & rule.declarations.keys():
            styled_text = all(s.endswith((" .ge", " .gs")) for s in rule.selectors)
            assert styled_text or "color" in rule.declarations, rule.selectors


PLAIN_TOKENS = {"n", "nx", "nv", "w", "l"}  # names, variables, whitespace: the text colour


def coloured_classes() -> set[str]:
    return {
        selector.removeprefix(".code-block code .")
        for rule in token_rules()
        if "color" in rule.declarations
        for selector in rule.selectors
    }


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_every_token_class_of_common_languages_is_coloured(language: str) -> None:
    spans = highlight(SAMPLES[language], language) or ""
    classes = {c.split()[0] for c in re.findall(r'<span class="([^"]+)"', spans)}

    assert classes - PLAIN_TOKENS - coloured_classes() == set()


# --- preparation in steps -----------------------------------------------------------------------


def _fresh_lexer_class(language: str) -> type:
    """The lexer class of ``language`` as before its first instantiation."""
    lexer_class: type = pytest.importorskip("pygments.lexers").find_lexer_class_by_name(language)
    for name in ("_tokens", "_all_tokens", "_tmpname"):
        if name in vars(lexer_class):
            delattr(lexer_class, name)
    return lexer_class


REGEX_SAMPLES = sorted(set(SAMPLES) - {"console", "json", "pycon"})  # NOTE: no regex lexers


@pytest.mark.parametrize("language", REGEX_SAMPLES)
def test_preparation_in_steps_highlights_as_pygments_own_first_instantiation(
    language: str,
) -> None:
    lexer_class = _fresh_lexer_class(language)
    unprepared = highlight(SAMPLES[language], language)  # Pygments compiles it all at once
    _fresh_lexer_class(language)

    steps = sum(1 for _ in preparation(language))
    table = vars(lexer_class).get("_tokens")
    prepared = highlight(SAMPLES[language], language)

    assert steps >= 2 and table is not None  # the lookup, then one step per state
    assert vars(lexer_class)["_tokens"] is table  # highlight used the table built in steps
    assert prepared == unprepared


@pytest.mark.parametrize("language", ["console", "json", "pycon"])
def test_a_lexer_without_regex_states_is_left_to_pygments(language: str) -> None:
    assert sum(1 for _ in preparation(language)) <= 1
    spans = highlight(SAMPLES[language], language)

    assert spans is not None and highlighted_text(spans) == SAMPLES[language]


def test_preparation_has_nothing_to_do_twice_or_for_an_unknown_language() -> None:
    list(preparation("python"))

    assert list(preparation("python")) == []
    assert list(preparation("no-such-language")) == []


def test_preparation_without_pygments_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.ui.code.available", lambda: False)

    assert list(preparation("python")) == []


def test_an_unknown_language_never_asks_for_plugin_lexers(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_scan() -> None:
        raise AssertionError("scanned package metadata for plugin lexers")

    lexers = pytest.importorskip("pygments.lexers")
    # NOTE: pygments.lexers swaps its module for a lazy one: patch the functions' own globals.
    monkeypatch.setitem(lexers.find_lexer_class_by_name.__globals__, "find_plugin_lexers", no_scan)
    monkeypatch.setattr("pygments.plugin.find_plugin_lexers", no_scan)

    assert highlight("x = 1\n", "nosuchlanguage") is None
    assert list(preparation("nosuchlanguage")) == []
    assert highlight("x = 1\n", "Python") is not None  # aliases match in any case
