"""The demo model makes the app worth opening: thinking, markdown, tools, images, context."""

from __future__ import annotations

from playwright.sync_api import Page, expect

ANSWER_TIMEOUT_MS = 30_000


def _send(app: Page, prompt: str) -> None:
    app.locator("textarea[name=prompt]").fill(prompt)
    app.locator("textarea[name=prompt]").press("Enter")
    expect(app.locator("[data-role=assistant]").last).to_have_attribute(
        "data-status", "completed", timeout=ANSWER_TIMEOUT_MS
    )


def test_demo_turn_shows_thinking_markdown_tool_call_and_image(app: Page) -> None:
    app.locator("[data-action=thinking]").click()
    app.locator("[data-action=tools]").click()
    _send(app, "Please draw a river at dawn")
    answer = app.locator("[data-role=assistant]").last
    expect(answer.locator("[data-part=thinking]")).to_have_count(1)
    expect(answer.locator("[data-tool-call-id]").first).to_have_attribute(
        "data-tool-status", "done"
    )
    expect(answer.locator("[data-image-id]")).to_have_attribute("data-image-status", "completed")
    image_src = answer.locator("[data-image-id] img").get_attribute("src") or ""
    assert image_src.startswith("data:image/png;base64,")
    expect(answer.locator(".message-text h2")).to_have_count(1)
    expect(answer.locator(".message-text table")).to_have_count(1)
    expect(answer.locator(".message-text pre code")).not_to_have_count(0)


def test_context_ring_fills_turn_after_turn_until_compaction_is_recommended(app: Page) -> None:
    ring = app.locator("[data-context-ring]")
    ratios: list[float] = []
    for prompt in ("First question", "Second question", "Third question", "Fourth question"):
        _send(app, prompt)
        ratios.append(float(ring.get_attribute("data-ratio") or "nan"))
    assert ratios == sorted(ratios) and ratios[0] < ratios[-1]
    expect(ring).to_have_attribute("data-severity", "critical")
    expect(app.locator("[data-callout=compaction]")).to_be_visible()


def test_compaction_drops_the_context_shown_after_the_next_turn(app: Page) -> None:
    ring = app.locator("[data-context-ring]")
    for prompt in ("One", "Two", "Three", "Four"):
        _send(app, prompt)
    before = float(ring.get_attribute("data-ratio") or "nan")
    with app.expect_response("**/compact") as compacted:
        app.locator("[data-callout=compaction] [data-action=compact]").click()
    assert compacted.value.ok
    _send(app, "Five")
    assert float(ring.get_attribute("data-ratio") or "nan") < before
