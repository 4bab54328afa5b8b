"""Stop where the page is not cross-origin isolated (a static host without COOP/COEP; here the
reference server with ``--no-cross-origin-isolation``): the sandbox's worker is ended, a fresh
one starts at the next Run, and the page says the state was reset (SPEC §13)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import LiveServer, serve
from tests.e2e.test_code_run import (
    LOOP,
    answer_with_code,
    finished,
    run_block,
    running_loop,
    stop_ms,
)


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("server-not-isolated")
    arguments = ["server", "--host", "127.0.0.1", "--db", str(workdir / "riacho.db")]
    with serve(workdir, [*arguments, "--test-hooks", "--no-cross-origin-isolation"]) as server:
        yield server


@pytest.fixture
def page_server(plain_server: LiveServer) -> LiveServer:
    return plain_server


def test_stop_without_isolation_ends_the_worker_and_says_state_was_reset(
    app: Page, plain_server: LiveServer
) -> None:
    assert app.evaluate("crossOriginIsolated") is False
    answer = answer_with_code(app, plain_server, "x = 7", LOOP, "print('x' in globals())")
    finished(run_block(answer, 0), "done")
    loop = running_loop(run_block(answer, 1))
    assert stop_ms(loop) < 1000
    expect(loop).to_have_attribute("data-state-kept", "false")
    expect(loop.locator(".code-run-state")).to_have_text(
        "Stopped; Python was restarted, so variables were reset"
    )
    after = run_block(answer, 2)
    expect(after.locator(".code-run-state")).to_have_text("Starting Python…")
    finished(after, "done")
    expect(after.locator('[data-stream="stdout"]')).to_have_text("False\n")
