"""The service worker's list of the page's files (server/http/precache.py) and ``GET /sw.js``."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from server.http.precache import (
    Precache,
    PrecacheEntry,
    build_of,
    precached_paths,
    render_worker,
    revision,
)
from tests.server.conftest import MakeApi, StartServer

TEMPLATE = 'const PRECACHE = /* PRECACHE */ { build: "unbuilt", files: [] } /* END PRECACHE */;\n'
SITE = {
    "index.html": b"<!doctype html>",
    "pyscript.toml": b'name = "riacho"',
    "app/main.py": b"print('hi')",
    "app/ui/view.py": b"# in the wheel, not asked for by the page",
    "sw.js": TEMPLATE.encode(),
    "static/riacho.css": b"body {}",
    "static/riacho.css.br": b"compressed",
    "static/riacho.css.gz": b"compressed",
    "static/vendor/.stamp": b"x",
    "static/vendor/MANIFEST": b"x",
    "static/vendor/katex/fonts/KaTeX_Main-Regular.woff2": b"font",
    "static/vendor/pyodide/pyodide.asm.wasm": b"\0asm",
    "static/vendor/pyscript/core.js": b"export {}",
    "static/vendor/pyscript/service-worker.js": b"",
    "static/vendor/pyscript/codemirror-abc.js": b"editor",
    "static/vendor/pyscript/xterm-abc.js": b"terminal",
    "static/app/.sources-sha256": b"x",
    "static/app/__pycache__/x.pyc": b"x",
}
PRECACHED = [
    "index.html",
    "pyscript.toml",
    "config.json",
    "app/main.py",
    "static/riacho.css",
    "static/vendor/katex/fonts/KaTeX_Main-Regular.woff2",
    "static/vendor/pyodide/pyodide.asm.wasm",
    "static/vendor/pyscript/core.js",
]
CONFIG = b'{"apiBase": ""}'
MANIFEST = re.compile(r"/\* PRECACHE \*/ (.*) /\* END PRECACHE \*/")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for name, content in SITE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    return tmp_path


def manifest_of(worker: str) -> dict[str, object]:
    found = MANIFEST.search(worker)
    assert found is not None, worker
    return dict(json.loads(found.group(1)))


def test_the_page_files_are_kept_and_siblings_stamps_editor_and_terminal_are_not(
    root: Path,
) -> None:
    assert precached_paths(root) == PRECACHED[4:]
    assert [entry.url for entry in Precache(root, {"config.json": CONFIG}).entries()] == PRECACHED


def test_each_file_carries_the_hash_of_its_content_and_a_generated_config_its_own(
    root: Path,
) -> None:
    entries = {e.url: e.revision for e in Precache(root, {"config.json": CONFIG}).entries()}
    assert entries["static/riacho.css"] == revision(b"body {}")
    assert entries["config.json"] == revision(CONFIG)
    (root / "config.json").write_bytes(b'{"apiBase": "https://api.example.test"}')
    entries = {e.url: e.revision for e in Precache(root, {"config.json": CONFIG}).entries()}
    assert entries["config.json"] == revision(b'{"apiBase": "https://api.example.test"}')


def test_any_changed_file_is_a_new_build_and_an_unchanged_site_the_same_one(root: Path) -> None:
    precache = Precache(root, {"config.json": CONFIG})
    first = manifest_of(precache.worker())
    assert manifest_of(precache.worker()) == first
    css = root / "static" / "riacho.css"
    css.write_bytes(b"body { color: red }")
    os.utime(css, ns=(1, 1))  # NOTE: a new mtime and size: the hash is computed again
    second = manifest_of(precache.worker())
    assert second["build"] != first["build"]
    changed = [
        (a["url"], a["revision"] != b["revision"])
        for a, b in zip(first["files"], second["files"], strict=True)  # type: ignore[call-overload]
    ]
    assert [url for url, differs in changed if differs] == ["static/riacho.css"]


def test_a_written_worker_can_be_written_again_and_a_template_without_the_marks_is_refused() -> (
    None
):
    entries = [PrecacheEntry("index.html", "0123456789abcdef")]
    once = render_worker(TEMPLATE, entries)
    assert manifest_of(once) == {
        "build": build_of(entries),
        "files": [{"url": "index.html", "revision": "0123456789abcdef"}],
    }
    assert render_worker(once, entries) == once
    with pytest.raises(ValueError, match="placeholder"):
        render_worker("const PRECACHE = {};", entries)


@pytest.fixture
async def site(root: Path, start_server: StartServer) -> TestServer:
    return await start_server(static_root=root)


async def test_the_worker_is_served_revalidated_with_the_sites_files(
    site: TestServer, make_api: MakeApi
) -> None:
    page = await make_api(None, on=site)
    response = await page.client.get("/sw.js")
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-cache"
    files = manifest_of(await response.text())["files"]
    assert [f["url"] for f in files] == PRECACHED  # type: ignore[attr-defined]
