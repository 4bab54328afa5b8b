"""The demo model's words: deterministic markdown answers and reasoning for a prompt."""

from __future__ import annotations

import hashlib
import re

_TOKEN_RE = re.compile(r"\s*\S+|\s+")

_SNIPPETS = (
    (
        "python",
        'def greet(name: str) -> str:\n    """Say hello."""\n    return f"Olá, {name}!"\n\n'
        'print(greet("Riacho"))',
    ),
    ("javascript", "const words = prompt.split(/\\s+/);\nconsole.log(`${words.length} words`);"),
    (
        "sql",
        "SELECT chat_id, COUNT(*) AS messages\nFROM messages\nGROUP BY chat_id\n"
        "ORDER BY messages DESC;",
    ),
)
_TOPICS = (
    ("Streaming, step by step", "A stream is a promise kept piece by piece."),
    ("A small field guide", "Small, well-named pieces are easier to trust."),
    ("Notes from the river", "Um riacho corre sem pressa, mas nunca para."),
)


def _pick(prompt: str, count: int) -> int:
    return hashlib.sha256(prompt.encode()).digest()[0] % count


def answer_markdown(prompt: str, model_label: str, attachments: list[str], brief: bool) -> str:
    """The whole answer for a prompt: headings, a list, a table and fenced code."""
    topic, motto = _TOPICS[_pick(prompt, len(_TOPICS))]
    language, code = _SNIPPETS[_pick(prompt[::-1], len(_SNIPPETS))]
    words = prompt.split()
    quoted = " ".join(words[:24]) + (" …" if len(words) > 24 else "")
    sections = [
        f"## {topic}\n\nYou asked: *{quoted or '(an attachment)'}*. This is **{model_label}**, "
        f"a deterministic demo model: the same prompt always gives the same answer.\n",
        _attachments_section(attachments),
        "### What happens while you read\n\n"
        "- each piece of text arrives as one `text` event with its own `seq`;\n"
        "- the run has an id, so **Stop** cancels it on the server too;\n"
        "- a dropped connection can be **resumed** from the last `seq` seen.\n",
    ]
    if not brief:
        sections += [
            _table(words, prompt, model_label),
            f"```{language}\n{code}\n```\n",
            f"> {motto}\n",
        ]
    if "code" in prompt.lower():
        sections.append(_code_section())
    if any(word in prompt.lower() for word in _MATH_WORDS):
        sections.append(_MATH_SECTION)
    sections.append(
        "Further reading: [Server-sent events in the HTML standard]"
        "(https://html.spec.whatwg.org/multipage/server-sent-events.html).\n"
    )
    if "long" in prompt.lower():
        sections += [_long_section(i) for i in range(1, 7)]
    sections.append("That's all for now: ask again, or switch on *thinking* and *tools*.")
    return "\n".join(section for section in sections if section)


_MATH_WORDS = ("math", "formula", "equation", "quadratic", "matemática")
_MATH_SECTION = (
    "### A little math\n\n"
    "The roots of $ax^2 + bx + c = 0$ are\n\n"
    "$$x = \\frac{-b \\pm \\sqrt{b^2 - 4ac}}{2a}$$\n\n"
    "so for $x^2 - 5x + 6 = 0$ they are $x = 2$ and $x = 3$.\n"
)


def _attachments_section(attachments: list[str]) -> str:
    if not attachments:
        return ""
    items = "\n".join(f"{n}. `{name}`" for n, name in enumerate(attachments, 1))
    return f"### Attachments received\n\n{items}\n"


def _table(words: list[str], prompt: str, model_label: str) -> str:
    longest = max(words, key=len) if words else "—"
    return (
        "### Your prompt in numbers\n\n"
        "| Measure | Value |\n|---|---|\n"
        f"| Words | {len(words)} |\n| Characters | {len(prompt)} |\n"
        f"| Longest word | `{longest[:30].replace('|', '/')}` |\n| Model | {model_label} |\n"
    )


def _long_section(index: int) -> str:
    return (
        f"### Part {index}\n\n"
        f"Paragraph {index} of a long answer. Long answers exist so you can scroll, stop in the "
        "middle, and check that the partial text stays exactly as it arrived.\n\n"
        f"1. first point of part {index}\n2. second point\n3. third point\n"
    )


def _code_section() -> str:
    return (
        "### Reading a stream in Python\n\n"
        "```python\n"
        "async def read(response) -> str:\n"
        "    text = []\n"
        "    async for event in iter_events(response):\n"
        '        if event.type == "text":\n'
        "            text.append(event.text)\n"
        '    return "".join(text)\n'
        "```\n"
    )


def thinking_text(prompt: str, effort: str | None) -> str:
    """Reasoning whose length grows with the reasoning effort."""
    steps = {"low": 1, "medium": 2, "high": 4}.get(effort or "medium", 2)
    lines = [
        f"The user wrote {len(prompt.split())} words; I should answer in markdown.",
        "A heading, a short list, a table and one code sample will show the renderer.",
        "I will keep the tone friendly and the answer deterministic for tests.",
        "Double-check: every event carries runId and seq; the last one is done.",
    ]
    return " ".join(lines[:steps])


def tokens(text: str) -> list[str]:
    """Split text into word-sized deltas (whitespace stays with the following word)."""
    return _TOKEN_RE.findall(text)


def pieces(text: str, size: int) -> list[str]:
    """Cut text into pieces of ``size`` characters (tool arguments stream like this)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
