"""The chat stream store against a misbehaving stream, in real Chromium (SPEC §2, §5, §9).

Each scenario is played by the reference server for the page's own chat and run (see
``tests/e2e/scenarios.py``), so raw frames can carry the run id the page made.
"""

from __future__ import annotations

import itertools

from playwright.sync_api import Page, Route, expect

from tests.e2e import scenarios
from tests.e2e.conftest import BOOT_TIMEOUT_MS, LiveServer, PageGuard
from tests.e2e.scenarios import StreamRequest, done, error, raw, send, sleep, text, text_frame

STREAM_MS = 20_000
EVENTS_ROUTE = "**/api/runs/*/events"
HTTP_503_LOGGED = r"the server responded with a status of 503"
# NOTE: the page re-renders a message by replacing its element, so a status history is kept
# by watching the whole list rather than one element.
RECORD_STATUSES = """() => {
  window.__statuses = [];
  const note = () => {
    const el = document.querySelector('[data-role=assistant]:last-of-type');
    const status = el && el.getAttribute('data-status');
    if (status && window.__statuses[window.__statuses.length - 1] !== status) {
      window.__statuses.push(status);
    }
  };
  new MutationObserver(note).observe(document.body, {
    subtree: true, childList: true, attributes: true, attributeFilter: ['data-status'],
  });
}"""


def one_request(seen: list[StreamRequest]) -> StreamRequest:
    assert len(seen) == 1, "the page did not open exactly one stream"
    return seen[0]


def split_inside_code_points(data: bytes) -> list[bytes]:
    """``data`` cut after the first byte of every multi-byte UTF-8 code point."""
    cuts = [i + 1 for i, byte in enumerate(data) if byte >= 0xC0]
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if a < b]


def test_split_utf8_across_reads_renders_exact_text(riacho: Page, server: LiveServer) -> None:
    pieces = ["Olá ", "🌊 ", "日本"]

    def steps(request: StreamRequest) -> list[scenarios.Step]:
        body = b"".join(text_frame(request.run_id, n, p) for n, p in enumerate(pieces, 1))
        chunks = split_inside_code_points(body)
        assert len(chunks) >= 5, "the scenario must split code points"
        played = [step for chunk in chunks for step in (raw(chunk), sleep(40))]
        return [*played, done(seq=len(pieces) + 1)]

    seen = scenarios.on_next_stream(riacho, server, steps)
    answer = send(riacho, "Split my code points")
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text("Olá 🌊 日本")
    expect(answer).to_have_attribute("data-run-id", one_request(seen).run_id)
    expect(answer.locator("[data-warning=partial]")).to_have_count(0)


def test_many_events_in_one_read_all_render(riacho: Page, server: LiveServer) -> None:
    words = [f"word{n:02d}" for n in range(1, 51)]

    def steps(request: StreamRequest) -> list[scenarios.Step]:
        frames = [text_frame(request.run_id, n, f"{w} ") for n, w in enumerate(words, 1)]
        return [raw(b"".join(frames)), done(seq=len(words) + 1)]

    scenarios.on_next_stream(riacho, server, steps)
    answer = send(riacho, "Fifty events at once")
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text(" ".join(words))


def test_stream_without_terminal_event_is_interrupted_and_keeps_text(
    riacho: Page, server: LiveServer
) -> None:
    steps = [text("Part one, "), text("part two"), {"close": "clean"}]
    seen = scenarios.on_next_stream(riacho, server, lambda _request: steps)
    answer = send(riacho, "Cut me short")
    expect(answer).to_have_attribute("data-status", "interrupted", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text("Part one, part two")
    expect(answer.locator("[data-warning=partial]")).to_be_visible()
    expect(answer.locator("[data-action=resume]")).to_be_visible()
    expect(answer.locator("[data-action=regenerate]")).to_be_visible()
    expect(answer.locator("[data-action=copy]")).to_be_disabled()
    assert scenarios.run_record(server, one_request(seen).run_id)["status"] == "interrupted"


def test_stop_mid_stream_stops_generation_on_the_server(riacho: Page, server: LiveServer) -> None:
    riacho.evaluate(RECORD_STATUSES)
    answer = send(riacho, "Please write a long answer")
    expect(answer).to_have_attribute("data-status", "receiving", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).not_to_be_empty()
    riacho.locator("[data-action=stop]").click()
    expect(answer).to_have_attribute("data-status", "cancelled", timeout=STREAM_MS)
    expect(answer.locator("[data-cancel=confirmed]")).to_be_attached()
    expect(answer.locator("[data-warning=partial]")).to_be_visible()
    expect(answer.locator("[data-action=regenerate]")).to_be_visible()
    kept = answer.locator(".message-text")
    expect(kept).not_to_be_empty()
    expect(kept).not_to_contain_text("That's all for now")  # the demo answer's last line
    statuses: list[str] = riacho.evaluate("window.__statuses")
    assert statuses.index("cancelling") < statuses.index("cancelled"), statuses
    record = scenarios.run_record(server, answer.get_attribute("data-run-id") or "")
    assert record["cancelRequested"] is True
    assert record["generationStopped"] is True
    assert record["status"] == "cancelled"


def test_pre_stream_503_shows_banner_and_keeps_prompt(
    riacho: Page, server: LiveServer, guard: PageGuard
) -> None:
    guard.allow_console_error(HTTP_503_LOGGED)
    unavailable = {"code": "model_unavailable", "message": "The model is resting."}
    first = {"status": 503, "json": {"error": unavailable}, "headers": {"Retry-After": "7"}}
    seen = scenarios.on_next_stream(riacho, server, lambda _request: [first])
    prompt = "Is anyone there?"
    send(riacho, prompt)
    expect(riacho.locator("[data-error-code=model_unavailable]").first).to_be_visible(
        timeout=STREAM_MS
    )
    expect(riacho.locator("textarea[name=prompt]")).to_have_value(prompt)
    expect(riacho.locator("[data-action=send]")).to_be_enabled()
    assert one_request(seen).prompt == prompt


def test_stop_before_first_byte_cancels_on_the_server(riacho: Page, server: LiveServer) -> None:
    steps = [sleep(5_000), text("Too late"), done()]
    seen = scenarios.on_next_stream(riacho, server, lambda _request: steps)
    answer = send(riacho, "Take your time")
    expect(answer).to_have_attribute("data-status", "connecting", timeout=STREAM_MS)
    riacho.locator("[data-action=stop]").click()
    expect(answer).to_have_attribute("data-status", "cancelled", timeout=STREAM_MS)
    expect(answer.locator("[data-cancel=confirmed]")).to_be_attached()
    expect(answer.locator(".message-text")).to_be_empty()
    record = scenarios.run_record(server, one_request(seen).run_id)
    assert record["cancelRequested"] is True
    assert record["generationStopped"] is True
    assert record["eventsLogged"] == 0


def test_repeated_seqs_are_rendered_once(riacho: Page, server: LiveServer) -> None:
    steps = [
        text("Alpha ", seq=1),
        text("beta ", seq=2),
        text("beta ", seq=2),
        text("Alpha ", seq=1),
        text("gamma", seq=3),
        done(seq=4),
    ]
    scenarios.on_next_stream(riacho, server, lambda _request: steps)
    answer = send(riacho, "Say it twice")
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text("Alpha beta gamma")
    expect(answer.locator("[data-warning=partial]")).to_have_count(0)


def watch_replays(page: Page) -> list[str]:
    """The ``Last-Event-ID`` of every event-log read (resume or gap replay) the page makes."""
    seen: list[str] = []

    def handle(route: Route) -> None:
        seen.append(route.request.headers.get("last-event-id", ""))
        route.continue_()

    page.route(EVENTS_ROUTE, handle)
    return seen


def test_missing_seq_the_log_lacks_too_is_interrupted_with_gap_and_keeps_text(
    riacho: Page, server: LiveServer
) -> None:
    # NOTE: event steps are the run's log too, so the replay from seq 1 misses seq 2 as well.
    riacho.evaluate(RECORD_STATUSES)
    replays = watch_replays(riacho)
    steps = [text("Alpha ", seq=1), text("gamma", seq=3), done(seq=4)]
    scenarios.on_next_stream(riacho, server, lambda _request: steps)
    answer = send(riacho, "Lose a piece")
    expect(answer).to_have_attribute("data-status", "interrupted", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text("Alpha gamma")
    expect(answer.locator("[data-warning=partial]")).to_be_visible()
    expect(answer.locator("[data-action=resume]")).to_be_visible()
    expect(answer.locator("[data-action=regenerate]")).to_be_visible()
    expect(answer.locator("[data-action=copy]")).to_be_disabled()
    assert replays == ["0"], "the gap was not replayed from the first seq"
    statuses: list[str] = riacho.evaluate("window.__statuses")
    assert "completed" not in statuses, statuses


def test_event_garbled_on_the_wire_is_filled_from_the_log(riacho: Page, server: LiveServer) -> None:
    # NOTE: a raw step without a line end glues itself to the next frame's first line, so seq 2
    # reaches the page as invalid JSON (its seq unreadable: a gap) while the log keeps it whole.
    riacho.evaluate(RECORD_STATUSES)
    replays = watch_replays(riacho)
    steps = [
        text("Alpha ", seq=1),
        raw(b"data: "),
        text("beta ", seq=2),
        text("gamma", seq=3),
        done(seq=4),
    ]
    scenarios.on_next_stream(riacho, server, lambda _request: steps)
    answer = send(riacho, "Garble a piece")
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text("Alpha beta gamma")
    expect(answer.locator("[data-warning=partial]")).to_have_count(0)
    expect(answer.locator("[data-action=copy]")).to_be_enabled()
    assert replays == ["0"], "the gap was not replayed from the first seq"
    statuses: list[str] = riacho.evaluate("window.__statuses")
    assert "interrupted" not in statuses, statuses


def test_error_event_mid_stream_fails_with_code_and_keeps_text(
    riacho: Page, server: LiveServer
) -> None:
    steps = [text("Half an "), text("answer"), error("the model crashed", "provider_error")]
    scenarios.on_next_stream(riacho, server, lambda _request: steps)
    answer = send(riacho, "Crash halfway")
    expect(answer).to_have_attribute("data-status", "failed", timeout=STREAM_MS)
    expect(answer.locator("[data-error-code=provider_error]")).to_be_visible()
    expect(answer.locator(".message-text")).to_have_text("Half an answer")
    expect(answer.locator("[data-warning=partial]")).to_be_visible()
    expect(answer.locator("[data-action=regenerate]")).to_be_visible()


def test_malformed_frame_is_skipped_and_run_completes(riacho: Page, server: LiveServer) -> None:
    steps = [
        text("Before ", seq=1),
        raw(b"data: {this is not json\n\n"),
        raw(b'data: {"type":"text","text":"no run, no seq"}\n\n'),
        text("after", seq=2),
        done(seq=3),
    ]
    scenarios.on_next_stream(riacho, server, lambda _request: steps)
    answer = send(riacho, "Garble one frame")
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text("Before after")
    expect(answer.locator("[data-warning=partial]")).to_have_count(0)


def test_idle_timeout_fails_run_and_keeps_text(
    page: Page, guard: PageGuard, server: LiveServer
) -> None:
    page.goto(server.url + "/?idleTimeoutMs=1500")
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    steps = [text("Then silence"), {"keepalive": True}, {"hold": True}]
    scenarios.on_next_stream(page, server, lambda _request: steps)
    answer = send(page, "Go quiet")
    expect(answer).to_have_attribute("data-status", "failed", timeout=STREAM_MS)
    expect(answer.locator("[data-error-code=idle_timeout]")).to_be_visible()
    expect(answer.locator(".message-text")).to_have_text("Then silence")
    expect(answer.locator("[data-warning=partial]")).to_be_visible()


def test_a_stream_the_page_stops_reading_is_closed_at_once(
    page: Page, guard: PageGuard, server: LiveServer
) -> None:
    # NOTE: an event over the page's limit fails the run without a cancel request, so the only
    # way the server learns of it is the page aborting its fetch when it stops reading.
    page.goto(server.url + "/?maxEventBytes=2048")
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    steps = [text("Fine so far"), raw(b"data: " + b"x" * 4096 + b"\n\n"), {"hold": True}]
    seen = scenarios.on_next_stream(page, server, lambda _request: steps)
    answer = send(page, "Send too much")
    expect(answer).to_have_attribute("data-status", "failed", timeout=STREAM_MS)
    expect(answer.locator("[data-error-code=event_too_large]")).to_be_visible()
    expect(answer.locator(".message-text")).to_have_text("Fine so far")
    run_id = one_request(seen).run_id
    record = scenarios.wait_for_record(server, run_id, lambda r: bool(r["clientDisconnected"]))
    assert record["cancelRequested"] is False
