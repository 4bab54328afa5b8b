"""Markdown to safe HTML (SPEC §7): raw HTML off, URL allow-list, linear block splitting."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.ui.markdown import is_safe_image, is_safe_link, render_markdown, split_blocks
from tests.unit.html_tree import Element, parse_html

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
