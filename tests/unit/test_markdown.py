"""Markdown to safe HTML (SPEC §7): raw HTML off, URL allow-list, code blocks, math, linear
block splitting, the streaming cursor."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.texmath import texmath_plugin

from app.ui.markdown import (
    CURSOR,
    DISPLAY_MATH_TOKENS,
    INLINE_MATH_TOKENS,
    close_open_markup,
    is_safe_image,
    is_safe_link,
    render_markdown,
    split_blocks,
    with_cursor,
)
from tests.unit.html_tree import Element, parse_html

ROOT = Path(__file__).resolve().parents[2]

LINK_URL = re.compile(r"^(?:https?:|mailto:)", re.IGNORECASE)
IMAGE_URL = re.compile(r"^(?:https?:|data:image/(?:png|jpeg|gif|webp)[;,])", re.IGNORECASE)
EXECUTABLE_TAGS = frozenset(
    {"script", "iframe", "object", "embed", "style", "svg", "math", "form", "base", "link", "meta"}
)
URL_ATTRIBUTES = frozenset({"href", "src", "srcset", "action", "formaction", "xlink:href"})


def assert_safe(html: str) -> Element:
    """No script, no event handler, no URL outside the allow-list; links open safely."""
    assert "<script" not in html.lower()
    root = parse_html(html)
    for element in root.iter():
        assert element.tag not in EXECUTABLE_TAGS, html
        for name, value in element.attr_list:
            assert not name.startswith("on"), f"event handler {name}= in {html}"
            assert name not in {"style", "srcdoc"}, html
            if name in URL_ATTRIBUTES:
                allowed = LINK_URL if (element.tag, name) == ("a", "href") else IMAGE_URL
                assert (element.tag, name) in {("a", "href"), ("img", "src")}, html
                assert allowed.match(value or ""), f"{name}={value!r} in {html}"
        if element.tag == "a":
            assert element.get("target") == "_blank"
            assert element.get("rel") == "noopener noreferrer"
    return root


# --- hostile input ------------------------------------------------------------------------------

DEEP = 2000
HOSTILE_MARKDOWN = [
    pytest.param("<script>alert(1)</script>", id="script-block"),
    pytest.param("hi <script>alert(1)</script> there", id="script-inline"),
    pytest.param("<SCRIPT SRC=//evil.example/x.js></SCRIPT>", id="script-upper-case"),
    pytest.param('<img src=x onerror="alert(1)">', id="img-onerror"),
    pytest.param("text <img src=x onerror=alert(1)> text", id="img-onerror-inline"),
    pytest.param("<svg onload=alert(1)>", id="svg-onload"),
    pytest.param('<iframe src="javascript:alert(1)"></iframe>', id="iframe"),
    pytest.param("<div>\n<b onclick=alert(1)>raw</b>\n</div>", id="raw-html-block"),
    pytest.param("<!-- c --><script>alert(1)</script>", id="html-comment-then-script"),
    pytest.param('<a href="javascript:alert(1)">x</a>', id="raw-anchor"),
    pytest.param("[x](javascript:alert(1))", id="javascript-link"),
    pytest.param("[x](JaVaScRiPt:alert(1))", id="javascript-link-mixed-case"),
    pytest.param("[x](java&#x73;cript:alert(1))", id="javascript-link-hex-entity"),
    pytest.param("[x](&#106;avascript:alert(1))", id="javascript-link-decimal-entity"),
    pytest.param("[x](javascript&colon;alert(1))", id="javascript-link-named-entity"),
    pytest.param("[x](java&#10;script:alert(1))", id="javascript-link-newline-entity"),
    pytest.param("[x](java&#9;script:alert(1))", id="javascript-link-tab-entity"),
    pytest.param("[x](   javascript:alert(1))", id="javascript-link-leading-space"),
    pytest.param("[x](<javascript:alert(1)>)", id="javascript-link-angle-brackets"),
    pytest.param("[x](%6Aavascript:alert(1))", id="javascript-link-percent-encoded"),
    pytest.param("<javascript:alert(1)>", id="javascript-autolink"),
    pytest.param("[x][r]\n\n[r]: javascript:alert(1)", id="javascript-reference-link"),
    pytest.param("![x](javascript:alert(1))", id="javascript-image"),
    pytest.param(
        "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)", id="data-html-link"
    ),
    pytest.param("[x](DATA:text/html,<script>alert(1)</script>)", id="data-html-link-upper"),
    pytest.param("![x](data:text/html,<script>alert(1)</script>)", id="data-html-image"),
    pytest.param("[x](vbscript:msgbox(1))", id="vbscript-link"),
    pytest.param("[x](VBScript:msgbox(1))", id="vbscript-link-mixed-case"),
    pytest.param("[x](file:///etc/passwd)", id="file-link"),
    pytest.param("[x](//evil.example/path)", id="protocol-relative-link"),
    pytest.param("![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)", id="svg-image"),
    pytest.param("![x](DATA:IMAGE/SVG+XML,<svg onload=alert(1)>)", id="svg-image-upper"),
    pytest.param("![x](data:image/png.svg+xml,AAAA)", id="image-type-prefix-trick"),
    pytest.param("[![x](data:image/svg+xml,AAAA)](https://a.example)", id="svg-in-link"),
    pytest.param("[x](data:image/png;base64,AAAA)", id="data-image-as-link-target"),
    pytest.param("![x](mailto:a@b.example)", id="mailto-image"),
    pytest.param(
        '[x](https://a.example "t\\" onmouseover=\\"alert(1)")', id="link-title-double-quotes"
    ),
    pytest.param(
        "[x](https://a.example 't\\' onclick=\\'alert(1)')", id="link-title-single-quotes"
    ),
    pytest.param('[x](https://a.example/" onmouseover="alert(1))', id="quote-in-link-url"),
    pytest.param('![a" onerror="alert(1)](https://a.example/i.png)', id="image-alt-quotes"),
    pytest.param('![a](https://a.example/i.png "t\\" onload=\\"x")', id="image-title-quotes"),
    pytest.param("[<img src=x onerror=alert(1)>](https://a.example)", id="html-in-link-text"),
    pytest.param("`<script>alert(1)</script>`", id="script-in-inline-code"),
    pytest.param("```html\n<script>alert(1)</script>", id="script-in-unclosed-fence"),
    pytest.param("\x00<script>alert(1)</script>", id="nul-before-script"),
    pytest.param(">" * DEEP + " <script>x</script>", id="huge-nesting-blockquotes"),
    pytest.param("\n".join("  " * i + "- x" for i in range(300)), id="huge-nesting-lists"),
    pytest.param("[" * DEEP + "x" + "](javascript:alert(1))" * DEEP, id="huge-nesting-brackets"),
    pytest.param("*" * DEEP + "x" + "*" * DEEP, id="huge-nesting-emphasis"),
    pytest.param("<" * DEEP + "script>", id="many-angle-brackets"),
    pytest.param('```"><script>alert(1)</script>\nx', id="fence-info-markup"),
    pytest.param('~~~`" onmouseover=`alert(1)\ncode', id="fence-info-quotes-and-backticks"),
    pytest.param('```py" onclick="alert(1)\nx\n```', id="fence-info-breaking-an-attribute"),
    pytest.param("```py <img src=x onerror=alert(1)>\nx", id="fence-info-markup-after-a-word"),
    pytest.param("```c&#34;&#62;&#60;script&#62;\nx", id="fence-info-entities"),
    pytest.param("    </code></pre><script>alert(1)</script>", id="script-in-indented-code"),
    pytest.param("$<script>alert(1)</script>$", id="script-in-inline-math"),
    pytest.param("$$\n</div><script>alert(1)</script>\n$$", id="script-in-display-math"),
    pytest.param("a $$<img src=x onerror=alert(1)>$$ b", id="img-in-display-math-in-text"),
    pytest.param("\\(</span><script>alert(1)</script>\\)", id="script-in-bracket-inline-math"),
    pytest.param("\\[\n<svg onload=alert(1)>\n\\]", id="svg-in-bracket-display-math"),
    pytest.param('$$a$$ ("><script>x</script>)', id="script-as-equation-label"),
    pytest.param('\\[a\\] ("><script>x</script>)', id="script-as-bracket-equation-label"),
    pytest.param("$" * DEEP, id="many-dollars"),
    pytest.param("\\(" * DEEP, id="many-open-parentheses"),
    pytest.param("\\[\n" * DEEP, id="many-open-brackets"),
]


@pytest.mark.parametrize("source", HOSTILE_MARKDOWN)
def test_hostile_markdown_renders_no_executable_html(source: str) -> None:
    assert_safe(render_markdown(source))


@pytest.mark.parametrize(
    ("source", "tag", "attribute", "value"),
    [
        pytest.param(
            '[x](https://a.example "t\\" onmouseover=\\"alert(1)")',
            "a",
            "title",
            't" onmouseover="alert(1)',
            id="link-title",
        ),
        pytest.param(
            '![a" onerror="alert(1)](https://a.example/i.png)',
            "img",
            "alt",
            'a" onerror="alert(1)',
            id="image-alt",
        ),
    ],
)
def test_quotes_stay_inside_their_attribute(
    source: str, tag: str, attribute: str, value: str
) -> None:
    element = assert_safe(render_markdown(source)).one(tag=tag)

    assert element.get(attribute) == value
    assert [name for name, _ in element.attr_list if name.startswith("on")] == []


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("<script>alert(1)</script>", id="script"),
        pytest.param("<div onclick=x>\nraw\n</div>", id="html-block"),
        pytest.param("a <b>bold</b> c", id="inline-html"),
    ],
)
def test_raw_html_is_shown_as_text(source: str) -> None:
    root = parse_html(render_markdown(source))

    assert root.find_all(tag="b") == [] and root.find_all(tag="div") == []
    assert source.split("\n")[0] in root.text


@pytest.mark.parametrize(
    ("source", "language", "code_text"),
    [
        pytest.param("```python\nprint(1)\n\nprint(2)", "python", "print(1)\n\nprint(2)", id="py"),
        pytest.param("```\n<p>not html</p>", None, "<p>not html</p>", id="html-inside"),
        pytest.param("~~~\nx = 1", None, "x = 1", id="tilde"),
        pytest.param("intro\n\n```js\nlet a", "js", "let a", id="after-a-paragraph"),
        pytest.param("```sh", "sh", "", id="fence-line-only"),
    ],
)
def test_unclosed_code_fence_renders_as_code(
    source: str, language: str | None, code_text: str
) -> None:
    root = assert_safe(render_markdown(source))

    code = root.one(tag="pre").one(tag="code")
    assert code.get("class") == (f"language-{language}" if language else None)
    assert code.text.rstrip("\n") == code_text
    assert all("```" not in p.text and "~~~" not in p.text for p in root.find_all(tag="p"))


# --- code blocks --------------------------------------------------------------------------------


def test_fenced_code_renders_as_a_code_block_with_a_head() -> None:
    assert render_markdown("```python\nif a < b:\n```") == (
        '<div class="code-block"><div class="code-head"><span class="code-lang">python</span>'
        '<button type="button" class="run-code" data-action="run-code" aria-label="Run code">'
        "Run</button>"
        '<button type="button" class="copy-code" data-action="copy-code" aria-label="Copy code">'
        'Copy</button></div><pre tabindex="0"><code class="language-python" data-lang="python">'
        "if a &lt; b:\n</code></pre></div>\n"
    )


@pytest.mark.parametrize(
    ("source", "label", "language"),
    [
        pytest.param("```js\nx", "js", "js", id="fence"),
        pytest.param("~~~ rust ignore\nx", "rust", "rust", id="first-word-of-the-info"),
        pytest.param("```c\\+\\+\nx", "c++", "c++", id="backslash-escapes-undone"),
        pytest.param("```\nx", "text", None, id="no-info"),
        pytest.param("    x = 1", "text", None, id="indented"),
        pytest.param('```"><script>\nx', "text", None, id="markup"),
        pytest.param("```{.python}\nx", "text", None, id="attribute-syntax"),
        pytest.param("```" + "x" * 40 + "\nx", "text", None, id="too-long"),
    ],
)
def test_code_block_language(source: str, label: str, language: str | None) -> None:
    root = assert_safe(render_markdown(source))

    code = root.one(tag="code")
    assert root.one("class", "code-lang").text == label
    assert code.get("class") == (f"language-{language}" if language else None)
    assert code.get("data-lang") == language


@pytest.mark.parametrize(
    "source",
    [pytest.param("```py\nx = 1\n```", id="fence"), pytest.param("    x = 1", id="indented")],
)
def test_copy_button_only_on_finished_text(source: str) -> None:
    finished = parse_html(render_markdown(source))
    streaming = parse_html(render_markdown(source, finished=False))

    assert len(finished.find_all("data-action", "copy-code", tag="button")) == 1
    assert streaming.find_all(tag="button") == []
    assert streaming.one(tag="code").text == finished.one(tag="code").text == "x = 1\n"


def test_code_block_is_focusable_for_scrolling() -> None:
    assert parse_html(render_markdown("```\nx\n```")).one(tag="pre").get("tabindex") == "0"


# --- math ---------------------------------------------------------------------------------------

MathElement = tuple[str, str, str]  # (tag, data-math, TeX)

MATH_CASES = [
    pytest.param("$x^2$", [("span", "inline", "x^2")], id="dollar"),
    pytest.param("$a$ and $b$", [("span", "inline", "a"), ("span", "inline", "b")], id="two"),
    pytest.param("$a\nb$", [("span", "inline", "a\nb")], id="dollar-across-a-line-end"),
    pytest.param("\\(x\\)", [("span", "inline", "x")], id="parentheses"),
    pytest.param("$$x$$", [("div", "display", "x")], id="double-dollar-line"),
    pytest.param("$$\n\\frac{a}{b}\n$$", [("div", "display", "\\frac{a}{b}")], id="dollar-block"),
    pytest.param("\\[x\\]", [("div", "display", "x")], id="bracket-line"),
    pytest.param("\\[\nx\ny\n\\]", [("div", "display", "x\ny")], id="bracket-block"),
    pytest.param("a $$x$$ b", [("span", "display", "x")], id="double-dollar-in-text"),
    pytest.param("a \\[x\\] b", [("span", "display", "x")], id="bracket-in-text"),
    pytest.param("see\n$$\nx\n$$", [("span", "display", "x")], id="dollar-block-after-text"),
    pytest.param("$$a$$ (1)", [("span", "display", "a")], id="dollar-label-stays-text"),
    pytest.param("\\[a\\] (1)", [("span", "display", "a")], id="bracket-label-stays-text"),
    pytest.param("> $$\n> a\n> $$", [("div", "display", "a")], id="in-a-blockquote"),
    pytest.param("- \\[\n  a\n  \\]", [("div", "display", "a")], id="in-a-list-item"),
    pytest.param("$$\nx < y & z\n$$", [("div", "display", "x < y & z")], id="escaped"),
    pytest.param("$$$$", [("div", "display", "")], id="empty-display"),
]


@pytest.mark.parametrize(("source", "expected"), MATH_CASES)
def test_math_keeps_its_tex_as_text(source: str, expected: list[MathElement]) -> None:
    root = assert_safe(render_markdown(source))

    found = root.find_all("class", "math")
    assert [(m.tag, m.get("data-math"), m.text) for m in found] == expected
    for element in found:
        assert [name for name, _ in element.attr_list] == ["class", "data-math"]
        assert [c for c in element.children if isinstance(c, Element)] == []


@pytest.mark.parametrize(
    ("source", "text"),
    [
        pytest.param("$5 and $10", "$5 and $10", id="prices"),
        pytest.param("from $5 to $x", "from $5 to $x", id="price-then-unclosed"),
        pytest.param("$ x $", "$ x $", id="space-inside-the-dollars"),
        pytest.param("$x$5", "$x$5", id="digit-after-the-closing-dollar"),
        pytest.param("\\$x\\$", "$x$", id="escaped-dollars"),
        pytest.param("`$x$`", "$x$", id="inline-code"),
        pytest.param("$$", "$$", id="lone-double-dollar"),
        pytest.param("$$\na\n\nb\n$$", "$$\na\nb\n$$", id="blank-line-ends-display-math"),
        pytest.param("\\[\na\n\nb\n\\]", "[\na\nb\n]", id="blank-line-ends-bracket-math"),
        pytest.param("\\[\nx", "[\nx", id="unclosed-bracket"),
        pytest.param("\\(x", "(x", id="unclosed-parenthesis"),
    ],
)
def test_text_that_is_not_math(source: str, text: str) -> None:
    root = assert_safe(render_markdown(source))

    assert root.find_all("class", "math") == []
    assert root.text.strip() == text


def every_math_token_type(md: MarkdownIt, source: str) -> set[str]:
    tokens = md.parse(source)
    children = [child for token in tokens for child in token.children or []]
    return {token.type for token in tokens + children if token.type.startswith("math")}


def test_every_math_token_type_of_the_plugins_has_a_render_rule() -> None:
    """Any delimiters, any options: no math token may fall through to a generic <math> tag."""
    source = "$a$ $$b$$ \\(c\\) ``d`` $`e`$\n\n$$f$$ (1)\n\n\\[g\\] (2)\n\n```math\nh\n```\n"
    emitted = every_math_token_type(MarkdownIt().use(dollarmath_plugin, double_inline=True), source)
    for delimiters in ("brackets", "dollars", "gitlab", "julia", "kramdown"):
        md = MarkdownIt().use(texmath_plugin, delimiters=delimiters)
        emitted |= every_math_token_type(md, source + "\n$x$ $$y$$\n")

    assert emitted <= set(INLINE_MATH_TOKENS + DISPLAY_MATH_TOKENS)
    assert "math_block_eqno" in emitted and "math_single" in emitted  # NOTE: the corpus works
    assert not re.search(r"<(?:math|eqn?|section)\b|mathlabel", render_markdown(source))


# --- allowed URLs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "href"),
    [
        pytest.param("[x](https://a.example/p?q=1)", "https://a.example/p?q=1", id="https"),
        pytest.param("[x](http://a.example)", "http://a.example", id="http"),
        pytest.param("[x](HTTPS://A.example)", "HTTPS://A.example", id="upper-case-scheme"),
        pytest.param("[x](mailto:me@a.example)", "mailto:me@a.example", id="mailto"),
        pytest.param("<https://a.example>", "https://a.example", id="autolink"),
        pytest.param("<me@a.example>", "mailto:me@a.example", id="email-autolink"),
        pytest.param("[x][r]\n\n[r]: https://a.example", "https://a.example", id="reference"),
    ],
)
def test_allowed_links_open_in_a_new_tab_without_opener(source: str, href: str) -> None:
    link = assert_safe(render_markdown(source)).one(tag="a")

    assert link.get("href") == href
    assert link.get("target") == "_blank"
    assert link.get("rel") == "noopener noreferrer"


@pytest.mark.parametrize(
    "src",
    [
        pytest.param("https://a.example/i.png", id="https"),
        pytest.param("http://a.example/i.gif", id="http"),
        pytest.param("data:image/png;base64,iVBORw0KGgo=", id="data-png"),
        pytest.param("data:image/jpeg;base64,/9j/4AAQ", id="data-jpeg"),
        pytest.param("data:image/gif;base64,R0lGODlh", id="data-gif"),
        pytest.param("data:image/webp;base64,UklGRg==", id="data-webp"),
        pytest.param("DATA:IMAGE/PNG;base64,iVBORw0KGgo=", id="data-png-upper-case"),
    ],
)
def test_allowed_images_render(src: str) -> None:
    image = assert_safe(render_markdown(f"![a fox]({src})")).one(tag="img")

    assert image.get("src") == src
    assert image.get("alt") == "a fox"


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("![a fox](data:image/svg+xml;base64,PHN2Zz4=)", id="svg"),
        pytest.param("![a fox](mailto:a@b.example)", id="mailto"),
        pytest.param("![a fox](data:image/bmp;base64,Qk0=)", id="bmp"),
    ],
)
def test_refused_image_keeps_no_img(source: str) -> None:
    root = assert_safe(render_markdown(source))

    assert root.find_all(tag="img") == []


def test_refused_image_that_passed_link_validation_shows_its_alt_text() -> None:
    root = assert_safe(render_markdown("![a *red* fox](mailto:a@b.example)"))

    assert root.find_all(tag="img") == []
    assert root.text.strip() == "a red fox"
    assert root.one(tag="em").text == "red"


def test_data_image_as_link_target_keeps_the_text_without_href() -> None:
    link = assert_safe(render_markdown("[see](data:image/png;base64,AAAA)")).one(tag="a")

    assert not link.has("href")
    assert link.text == "see"


@pytest.mark.parametrize(
    ("url", "link", "image"),
    [
        pytest.param("https://a.example", True, True, id="https"),
        pytest.param("  http://a.example  ", True, True, id="http-with-spaces"),
        pytest.param("mailto:a@b.example", True, False, id="mailto"),
        pytest.param("MAILTO:a@b.example", True, False, id="mailto-upper"),
        pytest.param("data:image/png;base64,AA", False, True, id="data-png"),
        pytest.param("data:image/jpeg,AA", False, True, id="data-jpeg-comma"),
        pytest.param("data:image/svg+xml,<svg/>", False, False, id="data-svg"),
        pytest.param("data:image/pngx,AA", False, False, id="data-png-prefix"),
        pytest.param("data:text/html,<script>", False, False, id="data-html"),
        pytest.param("javascript:alert(1)", False, False, id="javascript"),
        pytest.param(" JavaScript:alert(1)", False, False, id="javascript-mixed-case"),
        pytest.param("vbscript:x", False, False, id="vbscript"),
        pytest.param("/relative", False, False, id="relative"),
        pytest.param("", False, False, id="empty"),
    ],
)
def test_url_allow_list(url: str, link: bool, image: bool) -> None:
    assert is_safe_link(url) is link
    assert is_safe_image(url) is image


def test_tables_and_strikethrough_are_enabled() -> None:
    root = assert_safe(render_markdown("| a | b |\n|---|---|\n| 1 | 2 |\n\n~~gone~~"))

    assert [td.text for td in root.find_all(tag="td")] == ["1", "2"]
    assert root.one(tag="s").text == "gone"


# --- split_blocks -------------------------------------------------------------------------------

SPLIT_CASES = [
    pytest.param("", ("", ""), id="empty"),
    pytest.param("abc", ("", "abc"), id="one-open-line"),
    pytest.param("abc\n", ("", "abc\n"), id="line-end-is-not-a-block-end"),
    pytest.param("a\nb", ("", "a\nb"), id="two-lines-one-paragraph"),
    pytest.param("a\n\nb\nc", ("a\n\n", "b\nc"), id="blank-line-ends-a-block"),
    pytest.param("a\n\n", ("", "a\n\n"), id="last-block-stays-open"),
    pytest.param("a\n\n2", ("", "a\n\n2"), id="unfinished-line-is-not-parsed"),
    pytest.param("a\n\nb\n", ("a\n\n", "b\n"), id="complete-line-starts-a-block"),
    pytest.param("a\n\nb\n\nc\n", ("a\n\nb\n\n", "c\n"), id="last-block-wins"),
    pytest.param("a\n \t\nb\n", ("a\n \t\n", "b\n"), id="whitespace-line-is-blank"),
    pytest.param("a\r\n\r\nb\r\n", ("a\r\n\r\n", "b\r\n"), id="crlf"),
    pytest.param("a\r\rb\r", ("a\r\r", "b\r"), id="lone-cr"),
    pytest.param("a\n\n ", ("", "a\n\n "), id="blank-last-piece-has-no-line-end"),
    pytest.param("```\nx\n\ny", ("", "```\nx\n\ny"), id="blank-inside-open-fence"),
    pytest.param("```py\nx\n\ny", ("", "```py\nx\n\ny"), id="fence-with-info-string"),
    pytest.param("~~~\nx\n\ny", ("", "~~~\nx\n\ny"), id="tilde-fence"),
    pytest.param("```\n~~~\n\nx", ("", "```\n~~~\n\nx"), id="tilde-does-not-close-backticks"),
    pytest.param("~~~\n```\n\nx", ("", "~~~\n```\n\nx"), id="backticks-do-not-close-tilde"),
    pytest.param(
        "```\nx\n\ny\n```\n\nz\n", ("```\nx\n\ny\n```\n\n", "z\n"), id="blank-after-closed-fence"
    ),
    pytest.param("a\n\n```\nx\n\ny", ("a\n\n", "```\nx\n\ny"), id="fence-opens-after-block"),
    pytest.param("  ```\nx\n\ny", ("", "  ```\nx\n\ny"), id="indented-fence"),
]


@pytest.mark.parametrize(("text", "expected"), SPLIT_CASES)
def test_split_blocks(text: str, expected: tuple[str, str]) -> None:
    assert split_blocks(text) == expected


FENCE_CASES = [
    pytest.param(
        "````\n```\n\nx",
        ("", "````\n```\n\nx"),
        id="three-backticks-do-not-close-a-four-backtick-fence",
    ),
    pytest.param(
        "```\na\n```js\n\nb",
        ("", "```\na\n```js\n\nb"),
        id="fence-line-with-info-string-does-not-close",
    ),
]


@pytest.mark.parametrize(("text", "expected"), FENCE_CASES)
def test_split_blocks_follows_commonmark_fence_rules(text: str, expected: tuple[str, str]) -> None:
    assert split_blocks(text) == expected


BLOCK_TEXT = st.text(alphabet="ab `~\n \t#>-*", max_size=60)


@settings(max_examples=200, deadline=None)
@given(BLOCK_TEXT, st.integers(min_value=0, max_value=60))
def test_split_blocks_partitions_and_only_grows(text: str, cut: int) -> None:
    """``finished + open == text``; a longer text never un-finishes a block."""
    prefix = text[:cut]
    finished, open_block = split_blocks(text)
    earlier, _ = split_blocks(prefix)

    assert finished + open_block == text
    assert finished == "" or finished.endswith("\n")
    assert finished.startswith(earlier)


MATH_SPLIT_CASES = [
    pytest.param("$$\na\n", ("", "$$\na\n"), id="open-display-math"),
    pytest.param("$$\n- x\n", ("", "$$\n- x\n"), id="list-line-inside-open-math"),
    pytest.param("\\[\n# x\n", ("", "\\[\n# x\n"), id="heading-line-inside-open-bracket"),
    pytest.param("- $$\n  a\n# x\n", ("", "- $$\n  a\n# x\n"), id="open-math-in-a-list"),
    pytest.param("$$\n- x\n$$\nb\n", ("$$\n- x\n$$\n", "b\n"), id="closed-display-math"),
    pytest.param("\\[\na\n\\]\nb\n", ("\\[\na\n\\]\n", "b\n"), id="closed-bracket-math"),
    pytest.param("$$\na\n\nb\n", ("$$\na\n\n", "b\n"), id="blank-line-ends-open-math"),
    pytest.param("a\n\n$$x$$\nb\n", ("a\n\n$$x$$\n", "b\n"), id="one-line-display-math"),
]


@pytest.mark.parametrize(("text", "expected"), MATH_SPLIT_CASES)
def test_split_blocks_keeps_display_math_that_may_still_close_open(
    text: str, expected: tuple[str, str]
) -> None:
    assert split_blocks(text) == expected


def render_as_the_view_does(text: str) -> str:
    """Grow ``text`` a character at a time; render each block once it is finished, and last
    the open block (app.ui.view.AnswerRenderer)."""
    finished, html = "", ""
    for end in range(1, len(text) + 1):
        added, _ = split_blocks(text[len(finished) : end])
        if added:
            finished, html = finished + added, html + render_markdown(added)
    _, open_block = split_blocks(text[len(finished) :])
    return html + render_markdown(open_block)


LINEAR_MATH_AND_CODE = [
    pytest.param("Euler: $e^{i\\pi}+1=0$.\n\nNext.", id="inline-math"),
    pytest.param("Intro\n\n$$\na\n- b\n$$\n\nAfter.", id="display-math-holding-a-list-line"),
    pytest.param("Intro\n\n\\[\n# a\n> b\n\\]\nAfter.", id="bracket-math-holding-block-lines"),
    pytest.param("$$\na\n\nb\n$$\n\nc", id="blank-line-inside-display-math"),
    pytest.param("- item\n  $$\n  x\n  $$\n- next", id="display-math-in-a-list"),
    pytest.param("> $$\n> x\n$$\n\nafter", id="display-math-closed-outside-a-quote"),
    pytest.param("```py\nx = 1\n\n\ny = 2\n```\n\n$x$", id="fence-then-math"),
    pytest.param("```\n$$\n\n$$\n```\n\nafter", id="dollars-inside-a-fence"),
    pytest.param("    code\n\n    more\n\ntext", id="indented-code"),
    pytest.param("$$\n```\ncode\n\nmore\n```", id="fence-inside-unclosed-math"),
]


@pytest.mark.parametrize("text", LINEAR_MATH_AND_CODE)
def test_rendering_block_by_block_equals_rendering_the_whole_text(text: str) -> None:
    assert render_as_the_view_does(text) == render_markdown(text)


BLOCK_LINES = [
    "$$", "\\[", "\\]", "a$$", "b \\]", "$$x$$", "\\[y\\]", "- $$", "> $$", "> \\]", "  $$",
    "- x", "# h", "> q", "1. n", "```", "~~~py", "---", "a $b$", "  c", "    d", "", "",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(BLOCK_LINES), max_size=10), st.booleans())
def test_any_growth_of_math_and_code_renders_like_the_whole(
    lines: list[str], line_end: bool
) -> None:
    text = "\n".join(lines) + ("\n" if line_end else "")

    assert render_as_the_view_does(text) == render_markdown(text)


# --- the streaming cursor -----------------------------------------------------------------------

CURSOR_CASES = [
    pytest.param("", "|", id="empty"),
    pytest.param("words", "<p>words|</p>\n", id="paragraph"),
    pytest.param("# Title", "<h1>Title|</h1>\n", id="heading"),
    pytest.param("a *b*", "<p>a <em>b|</em></p>\n", id="emphasis-at-the-end"),
    pytest.param("- a\n- b", "<ul>\n<li>a</li>\n<li>b|</li>\n</ul>\n", id="list"),
    pytest.param(
        "- a\n  - b",
        "<ul>\n<li>a\n<ul>\n<li>b|</li>\n</ul>\n</li>\n</ul>\n",
        id="nested-list",
    ),
    pytest.param(
        "- a\n\n- b",
        "<ul>\n<li>\n<p>a</p>\n</li>\n<li>\n<p>b|</p>\n</li>\n</ul>\n",
        id="loose-list",
    ),
    pytest.param("> a", "<blockquote>\n<p>a|</p>\n</blockquote>\n", id="blockquote"),
    pytest.param(
        "| a |\n|---|\n| 1 |",
        "<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1|</td>\n"
        "</tr>\n</tbody>\n</table>\n",
        id="table",
    ),
    pytest.param("a $x$", '<p>a <span class="math" data-math="inline">x</span>|</p>\n', id="math"),
    pytest.param("$$x$$", '<div class="math" data-math="display">x</div>|\n', id="display-math"),
    pytest.param("---", "<hr />\n|", id="thematic-break"),
]


@pytest.mark.parametrize(("source", "expected"), CURSOR_CASES)
def test_cursor_goes_at_the_end_of_the_innermost_last_element(source: str, expected: str) -> None:
    assert with_cursor(render_markdown(source)) == expected.replace("|", CURSOR)


@pytest.mark.parametrize(
    "source",
    [pytest.param("```py\nprint(1", id="open-fence"), pytest.param("```\nx\n\n", id="blank-line")],
)
def test_cursor_in_code_goes_just_inside_the_code_element(source: str) -> None:
    html = render_markdown(source, finished=False)

    assert with_cursor(html) == html.replace("</code>", CURSOR + "</code>")


@pytest.mark.parametrize(
    "html",
    [
        pytest.param("plain text", id="plain-text"),
        pytest.param("line\n", id="plain-text-with-a-line-end"),
        pytest.param("<br>", id="only-a-void-element"),
    ],
)
def test_cursor_goes_at_the_very_end_without_a_closing_tag(html: str) -> None:
    assert with_cursor(html) == html + CURSOR


@pytest.mark.parametrize(
    "html",
    [
        pytest.param("<p><script>x</script></p>", id="script"),
        pytest.param('<img src="https://a.example/i.png" onerror="x">', id="handler"),
        pytest.param(
            '<a href="javascript:x" target="_blank" rel="noopener noreferrer">x</a>', id="js"
        ),
        pytest.param('<img src="data:image/svg+xml,x">', id="svg-src"),
        pytest.param('<a href="https://a.example">x</a>', id="link-without-target"),
        pytest.param('<iframe src="https://a.example"></iframe>', id="iframe"),
    ],
)
def test_safety_check_itself_rejects_executable_html(html: str) -> None:
    with pytest.raises(AssertionError):
        assert_safe(html)


def printed_by_fresh_python(probe: str) -> list[str]:
    """The lines ``probe`` prints in a new interpreter (nothing of this session imported)."""
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return result.stdout.splitlines()


def test_the_app_imports_without_the_parsers() -> None:
    """A first visit's boot does not import markdown-it: the parsers load on first use."""
    probe = (
        "import importlib, pkgutil, sys, app\n"
        "skip = ('app.browser', 'app.main', 'app.ui.markdown_parser')\n"
        "for module in pkgutil.walk_packages(app.__path__, 'app.'):\n"
        "    if not module.name.startswith(skip):\n"
        "        importlib.import_module(module.name)\n"
        "print(sorted(name for name in sys.modules if name.startswith(('markdown_it', 'mdit'))))\n"
        "from app.ui.markdown import render_markdown\n"
        "print(render_markdown('*x*').strip(), 'markdown_it' in sys.modules)\n"
    )

    assert printed_by_fresh_python(probe) == ["[]", "<p><em>x</em></p> True"]


def test_loading_the_parser_ahead_imports_it() -> None:
    """What the page calls when idle after boot: the parsers are imported (and run once)."""
    probe = (
        "import sys\n"
        "from app.ui.markdown import load_parser\n"
        "print('app.ui.markdown_parser' in sys.modules)\n"
        "load_parser()\n"
        "print('app.ui.markdown_parser' in sys.modules)\n"
    )

    assert printed_by_fresh_python(probe) == ["False", "True"]


# --- markup a cut answer leaves open ------------------------------------------------------------

CUT_MARKUP = [
    # (the last block as it was cut, as it is rendered)
    ("Some **bold te", "Some **bold te**"),
    ("Some **bold** and *it", "Some **bold** and *it*"),
    ("x ~~gone", "x ~~gone~~"),
    ("a `code sp", "a `code sp`"),
    ("``a ` b", "``a ` b``"),
    ("see [the docs](https://exa", "see the docs"),
    ("see [the do", "see the do"),
    ("see ![a river](https://img", "see"),
    ("Say **", "Say"),
    ("* item one\n* item **two", "* item one\n* item **two**"),
    ("**bold `code** x", "**bold `code** x`"),
]
LEFT_AS_IS = [
    "2 * 3 is six",
    "done **bold** here",
    "*a* and *b* both",
    "snake_case_name and _under",
    "```py\nx = **1",
    "a footnote [1]",
    "Plain text, trailing space ",
    "* a bullet\n* another",
]


@pytest.mark.parametrize(("cut", "closed"), CUT_MARKUP)
def test_markup_a_cut_text_leaves_open_is_closed(cut: str, closed: str) -> None:
    assert close_open_markup(cut) == closed


@pytest.mark.parametrize("text", LEFT_AS_IS)
def test_text_with_nothing_open_is_left_exactly_as_it_is(text: str) -> None:
    assert close_open_markup(text) == text


def test_a_cut_answer_shows_its_bold_and_code_never_the_markers() -> None:
    html = render_markdown(close_open_markup("It is **very impor"))
    assert "<strong>very impor</strong>" in html
    assert "**" not in html
