"""A tiny element tree of an HTML fragment, for assertions on elements and attributes.

Tests read elements and attributes through it rather than substrings of the markup.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = frozenset({"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"})


@dataclass
class Element:
    """One parsed element: tag, attributes (as written, in order) and children."""

    tag: str
    attr_list: list[tuple[str, str | None]] = field(default_factory=list)
    children: list[Element | str] = field(default_factory=list)

    @property
    def attrs(self) -> dict[str, str | None]:
        return dict(self.attr_list)

    def get(self, name: str) -> str | None:
        return self.attrs.get(name)

    def has(self, name: str) -> bool:
        return name in self.attrs

    @property
    def text(self) -> str:
        return "".join(node for node in self._walk() if isinstance(node, str))

    def iter(self) -> Iterator[Element]:
        """Every descendant element, in document order."""
        return (node for node in self._walk() if isinstance(node, Element))

    def _walk(self) -> Iterator[Element | str]:
        # NOTE: iterative, so hostile deep nesting does not hit the recursion limit.
        stack: list[Element | str] = list(reversed(self.children))
        while stack:
            node = stack.pop()
            yield node
            if isinstance(node, Element):
                stack.extend(reversed(node.children))

    def find_all(
        self, name: str | None = None, value: str | None = None, *, tag: str = ""
    ) -> list[Element]:
        """Descendants with attribute ``name`` (equal to ``value`` when given) and/or ``tag``."""
        return [
            el
            for el in self.iter()
            if (not tag or el.tag == tag)
            and (name is None or el.has(name))
            and (value is None or name is None or el.get(name) == value)
        ]

    def one(self, name: str | None = None, value: str | None = None, *, tag: str = "") -> Element:
        found = self.find_all(name, value, tag=tag)
        assert len(found) == 1, f"expected one [{name}={value}] {tag}, found {len(found)}"
        return found[0]

    def classes(self) -> set[str]:
        return set((self.get("class") or "").split())


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root")
        self._stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, list(attrs))
        self._stack[-1].children.append(element)
        if tag not in VOID:
            self._stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._stack[-1].children.append(Element(tag, list(attrs)))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self._stack) - 1, 0, -1):
            if self._stack[depth].tag == tag:
                del self._stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self._stack[-1].children.append(data)


def parse_html(html: str) -> Element:
    """The element tree of an HTML fragment (under a ``#root`` element)."""
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def all_strings(root: Element) -> list[str]:
    """Every text node and attribute value of the tree, decoded."""
    values = [root.text]
    for element in root.iter():
        values.extend(value for _, value in element.attr_list if value is not None)
    return values
