"""Code run in the page (SPEC §13), one line per figure.

Run from the repository root after ``make setup``: ``.venv/bin/python tools/bench/coderun.py``
(``make bench`` runs it). It starts the reference server (COOP/COEP: the page is cross-origin
isolated), boots the page in the system Chromium, has the demo server answer with four Python
blocks, and measures in the page (``performance.now()``, MutationObserver):

1. a first Run of ``print(1)``: the click to its line shown (the sandbox's worker starts its
   own Python), beside the page's own boot to ``data-ready``;
2. a second Run of ``print(1)`` (the worker is warm);
3. Stop of a busy loop: the click to ``data-run-state=stopped`` (interrupted, state kept);
4. the page's longest frame gap (requestAnimationFrame) while code prints 10,000 lines;
5. the model's ``python`` (the demo, asked to "run python: print(1)"): Run on its card to the
   result back in the card (the page runs it, posts it, the run's ``tool_result`` arrives).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
from playwright.sync_api import Page, Route, sync_playwright

STREAM_ROUTE = "**/api/respond/stream"
BLOCKS = (
    "print(1)",
    "print(1)",
    "n = 0\nprint('looping')\nwhile True:\n    n += 1",
    "for i in range(10_000):\n    print(i)",
)
RUN_MS = 120_000

UNTIL_FIRST_LINE = """([index, timeout]) => new Promise((resolve, reject) => {
  const block = document.querySelectorAll('[data-role=assistant] .code-block')[index];
  const pressed = performance.now();
  const shown = () => {
    const panel = block.nextElementSibling;
    return panel?.matches('[data-code-output]') && panel.querySelector('[data-stream=stdout]');
  };
  const seen = new MutationObserver(() => {
    if (!shown()) return;
    seen.disconnect();
    resolve(performance.now() - pressed);
  });
  seen.observe(block.parentElement, { subtree: true, childList: true, characterData: true });
  setTimeout(() => reject(new Error('no output')), timeout);
  block.querySelector('[data-action=run-code]').click();
})"""
UNTIL_STOPPED = """(index) => new Promise((resolve) => {
  const block = document.querySelectorAll('[data-role=assistant] .code-block')[index];
  const panel = block.nextElementSibling;
  const pressed = performance.now();
  const seen = new MutationObserver(() => {
    if (panel.dataset.runState !== 'stopped') return;
    seen.disconnect();
    resolve([performance.now() - pressed, panel.dataset.stateKept]);
  });
  seen.observe(panel, { attributes: true });
  panel.querySelector('[data-action=stop-code]').click();
})"""
FRAME_GAP = """(index) => new Promise((resolve) => {
  const block = document.querySelectorAll('[data-role=assistant] .code-block')[index];
  let last = performance.now(), worst = 0, going = true;
  const tick = (now) => {
    worst = Math.max(worst, now - last);
    last = now;
    if (going) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  const seen = new MutationObserver(() => {
    const panel = block.nextElementSibling;
    if (!panel?.matches('[data-code-output]') || panel.dataset.runState !== 'done') return;
    seen.disconnect();
    going = false;
    const text = panel.querySelector('[data-stream=stdout]').textContent;
    resolve([worst, text.split('\\n').length - 1]);
  });
  seen.observe(block.parentElement, { subtree: true, childList: true, attributes: true });
  block.querySelector('[data-action=run-code]').click();
})"""
UNTIL_TOOL_RESULT = """([runId, timeout]) => new Promise((resolve, reject) => {
  const card = `[data-role=assistant][data-run-id="${runId}"] [data-runs-in=client]`;
  const pressed = performance.now();
  const seen = new MutationObserver(() => {
    if (!document.querySelector(`${card}[data-tool-status=done]`)) return;
    seen.disconnect();
    resolve(performance.now() - pressed);
  });
  seen.observe(document.body, { subtree: true, childList: true, attributes: true });
  setTimeout(() => reject(new Error('no result')), timeout);
  document.querySelector(`${card} [data-action=approve-tool]`).click();
})"""


def emit(line: str) -> None:
    print(line, flush=True)


def answer_with_blocks(page: Page, server: harness.Server) -> None:
    """Send a prompt the demo server answers with BLOCKS; wait until the answer is complete."""
    body = "".join(f"```python\n{code}\n```\n\n" for code in BLOCKS)

    def handle(route: Route) -> None:
        request: dict[str, Any] = route.request.post_data_json or {}
        steps = [
            {"event": {"type": "text", "text": body}},
            {"event": {"type": "done", "messageId": "msg_bench", "stopReason": "stop"}},
        ]
        scenario: dict[str, Any] = {"steps": steps}
        if request.get("chatId"):
            scenario["chatId"] = request["chatId"]
        server.api("POST", "/__test__/scenarios", scenario)
        route.continue_()

    page.route(STREAM_ROUTE, handle, times=1)
    page.locator("textarea[name=prompt]").fill("Code for the bench")
    page.locator("[data-action=send]").click()
    page.wait_for_selector(
        "[data-role=assistant][data-status=completed] [data-action=run-code]", timeout=RUN_MS
    )


def until_done(page: Page, index: int) -> None:
    """Wait until block ``index``'s run has ended (one run at a time)."""
    panel = page.locator("[data-role=assistant] .code-block").nth(index)
    panel = panel.locator("xpath=following-sibling::*[1][@data-code-output]")
    panel.and_(page.locator("[data-run-state=done]")).wait_for(timeout=RUN_MS)


def measure(page: Page, boot_ms: float) -> None:
    first = float(page.evaluate(UNTIL_FIRST_LINE, [0, RUN_MS]))
    until_done(page, 0)
    emit(
        f"code run: first Run of print(1) to its line {first:.0f} ms (the sandbox's worker"
        f" starts its own Python) / the page's boot to data-ready {boot_ms:.0f} ms"
        f" = {first / boot_ms:.2f}x"
    )
    second = float(page.evaluate(UNTIL_FIRST_LINE, [1, RUN_MS]))
    until_done(page, 1)
    emit(f"code run: second Run of print(1) to its line {second:.1f} ms (worker warm)")
    page.evaluate(UNTIL_FIRST_LINE, [2, RUN_MS])
    stop_ms, kept = page.evaluate(UNTIL_STOPPED, 2)
    how = "interrupted, state kept" if kept == "true" else "worker ended, state reset"
    emit(f"code run: Stop of a busy loop to stopped {float(stop_ms):.1f} ms ({how}; bound 1000 ms)")
    gap, lines = page.evaluate(FRAME_GAP, 3)
    emit(
        f"code run: the page's longest frame gap while code printed {int(lines):,} lines"
        f" {float(gap):.1f} ms (requestAnimationFrame)"
    )


def measure_model_python(page: Page) -> None:
    """The model's python, round trip from Run on its card to its result in the card."""
    with page.expect_request(STREAM_ROUTE) as sent:
        page.locator("textarea[name=prompt]").fill("Run python: print(1)")
        page.locator("[data-action=send]").click()
    run_id = (sent.value.post_data_json or {})["runId"]
    card = f'[data-run-id="{run_id}"] [data-runs-in=client] [data-action=approve-tool]'
    page.wait_for_selector(card, timeout=RUN_MS)
    round_trip = float(page.evaluate(UNTIL_TOOL_RESULT, [run_id, RUN_MS]))
    emit(
        f"code run: the model's python, Run on its card to its result in the card"
        f" {round_trip:.0f} ms (run in the page, posted, tool_result back; worker warm)"
    )


def main() -> int:
    try:
        harness.check_setup()
        executable = harness.chromium_path()
    except harness.BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="riacho-coderun-") as tmp:
        workdir = Path(tmp)
        server = harness.start_server(workdir, harness.make_static_root(workdir), 5)
        try:
            with sync_playwright() as playwright:
                browser = harness.launch(playwright, executable)
                page, boot_ms = harness.boot(browser.new_context(), server.url + "/")
                answer_with_blocks(page, server)
                measure(page, boot_ms)
                measure_model_python(page)
                browser.close()
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
