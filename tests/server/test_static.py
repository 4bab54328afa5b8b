"""The page files: MIME types, cache headers, config.json, no way out of the folders, and
compressed bodies (precompressed siblings, or text compressed on the fly) for clients asking."""

from __future__ import annotations

import gzip
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import brotli  # type: ignore[import-untyped]
import pytest
from aiohttp.test_utils import TestClient, TestServer
from yarl import URL

from server.http.static import choose_codings
from tests.server.conftest import MakeApi, StartServer
from tests.server.helpers import Api

FILES = {
    "index.html": "<!doctype html><title>Riacho</title>",
    "pyscript.toml": 'name = "riacho"',
    "app/main.py": "print('hi')",
    "static/app.css": "body {}",
    "static/icon.svg": "<svg/>",
    "static/data.json": "{}",
    "static/manifest.webmanifest": "{}",
    "static/icons/icon-192.png": "PNG",
    "static/boot.js": "1",
    "static/vendor/pyodide/pyodide.mjs": "export {}",
    "static/vendor/pyodide/pyodide.asm.wasm": "\0asm",
    "static/vendor/pyodide/python_stdlib.zip": "PK",
    "static/vendor/wheels/pydantic-2.14.4-py3-none-any.whl": "PK",
    "secret.txt": "outside",
}


# Files big enough for compression to pay, each with a real .br and .gz beside it.
WASM = "static/vendor/pyodide/big.wasm"
STDLIB = "static/vendor/pyodide/stdlib.zip"
PRECOMPRESSED = {
    WASM: b"\0asm" + bytes(range(256)) * 64,
    STDLIB: b"PK" + b"def f(): return 1\n" * 500,
}
APP_MODULE = "app/view.py"
APP_SOURCE = b"def render(state):\n    return state\n" * 200


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    for name, content in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    for name, data in PRECOMPRESSED.items():
        (root / name).write_bytes(data)
        (root / f"{name}.br").write_bytes(brotli.compress(data, quality=11))
        (root / f"{name}.gz").write_bytes(gzip.compress(data, 9))
    (root / APP_MODULE).write_bytes(APP_SOURCE)
    return root


@pytest.fixture
async def site(root: Path, start_server: StartServer) -> TestServer:
    return await start_server(static_root=root)


@pytest.fixture
async def page(site: TestServer, make_api: MakeApi) -> Api:
    return await make_api(None, on=site)


@pytest.fixture
async def raw(site: TestServer) -> AsyncIterator[TestClient[Any, Any]]:
    """A client that shows bodies as sent (no decompression) and sends no Accept-Encoding
    unless a test names one."""
    client: TestClient[Any, Any] = TestClient(site, auto_decompress=False)
    await client.start_server()
    yield client
    await client.close()


def decoded(body: bytes, coding: str | None) -> bytes:
    if coding == "br":
        return bytes(brotli.decompress(body))
    if coding == "gzip":
        return gzip.decompress(body)
    assert coding is None, coding
    return body


async def fetch(
    client: TestClient[Any, Any],
    path: str | URL,
    accept: str | None,
    method: str = "GET",
    **kw: Any,
) -> Any:
    """``path`` with that Accept-Encoding (None: no such header at all)."""
    headers = dict(kw.pop("headers", {}))
    if accept is None:
        kw["skip_auto_headers"] = ["Accept-Encoding"]
    else:
        headers["Accept-Encoding"] = accept
    return await client.request(method, path, headers=headers, **kw)


@pytest.mark.parametrize(
    ("path", "content_type", "cache"),
    [
        pytest.param("/", "text/html; charset=utf-8", "no-cache", id="root"),
        pytest.param("/index.html", "text/html; charset=utf-8", "no-cache", id="index"),
        pytest.param("/pyscript.toml", "text/plain; charset=utf-8", "no-cache", id="toml"),
        pytest.param("/app/main.py", "text/x-python; charset=utf-8", "no-cache", id="py"),
        pytest.param("/static/app.css", "text/css; charset=utf-8", "no-cache", id="css"),
        pytest.param("/static/icon.svg", "image/svg+xml; charset=utf-8", "no-cache", id="svg"),
        pytest.param("/static/data.json", "application/json; charset=utf-8", "no-cache", id="json"),
        pytest.param("/static/boot.js", "text/javascript; charset=utf-8", "no-cache", id="js"),
        pytest.param(
            "/static/manifest.webmanifest",
            "application/manifest+json; charset=utf-8",
            "no-cache",
            id="web-app-manifest",
        ),
        pytest.param("/static/icons/icon-192.png", "image/png", "no-cache", id="png"),
        pytest.param(
            "/static/vendor/pyodide/pyodide.mjs",
            "text/javascript; charset=utf-8",
            "public, max-age=31536000, immutable",
            id="vendor-mjs",
        ),
        pytest.param(
            "/static/vendor/pyodide/pyodide.asm.wasm",
            "application/wasm",
            "public, max-age=31536000, immutable",
            id="vendor-wasm",
        ),
        pytest.param(
            "/static/vendor/pyodide/python_stdlib.zip",
            "application/zip",
            "public, max-age=31536000, immutable",
            id="vendor-zip",
        ),
        pytest.param(
            "/static/vendor/wheels/pydantic-2.14.4-py3-none-any.whl",
            "application/octet-stream",
            "public, max-age=31536000, immutable",
            id="vendor-whl",
        ),
    ],
)
async def test_files_have_their_mime_type_and_cache_policy(
    page: Api, path: str, content_type: str, cache: str
) -> None:
    response = await page.client.get(path)
    assert response.status == 200
    assert response.headers["Content-Type"] == content_type
    assert response.headers["Cache-Control"] == cache


@pytest.mark.parametrize(
    "raw_path",
    [
        pytest.param("/app/%2e%2e/secret.txt", id="encoded-dot-dot"),
        pytest.param("/static/..%2fsecret.txt", id="encoded-slash"),
        pytest.param("/static/%2e%2e%2fsecret.txt", id="encoded-both"),
        pytest.param("/static/..\\secret.txt", id="backslash"),
        pytest.param("/app/../secret.txt", id="plain-dot-dot"),
        pytest.param("/secret.txt", id="not-a-page-file"),
        pytest.param("/static/vendor", id="folder"),
        pytest.param("/static/.hidden", id="dot-file"),
    ],
)
async def test_no_path_leaves_the_page_folders(page: Api, raw_path: str) -> None:
    response = await page.client.get(URL(raw_path, encoded=True))
    assert response.status == 404
    assert "outside" not in await response.text()


async def test_config_json_defaults_to_same_origin(page: Api) -> None:
    response = await page.client.get("/config.json")
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
    assert await response.json() == {"apiBase": ""}


async def test_config_json_file_wins_when_present(
    tmp_path: Path, make_api: MakeApi, start_server: StartServer
) -> None:
    (tmp_path / "config.json").write_text('{"apiBase": "https://api.example"}')
    api = await make_api(None, on=await start_server(static_root=tmp_path))
    assert await api.json("GET", "/config.json") == {"apiBase": "https://api.example"}


@pytest.mark.parametrize(
    ("accept", "coding"),
    [
        pytest.param("gzip, deflate, br, zstd", "br", id="browser"),
        pytest.param("br", "br", id="br-only"),
        pytest.param("gzip", "gzip", id="gzip-only"),
        pytest.param("gzip, deflate", "gzip", id="no-br"),
        pytest.param("x-gzip", "gzip", id="x-gzip-alias"),
        pytest.param("GZIP, BR", "br", id="case-insensitive"),
        pytest.param("br;q=0, gzip", "gzip", id="br-refused"),
        pytest.param("gzip;q=1.0, br;q=0.5", "gzip", id="client-prefers-gzip"),
        pytest.param("*", "br", id="star"),
        pytest.param(None, None, id="no-header"),
        pytest.param("", None, id="empty"),
        pytest.param("identity", None, id="identity"),
        pytest.param("deflate, zstd", None, id="neither"),
        pytest.param("br;q=0", None, id="br-q0"),
        pytest.param("br;q=0.000, gzip;q=0", None, id="both-q0"),
        pytest.param("*;q=0", None, id="star-q0"),
        pytest.param("br;q=oops", None, id="bad-q"),
        pytest.param("br;q=2", None, id="q-out-of-range"),
    ],
)
def test_the_coding_follows_accept_encoding(accept: str | None, coding: str | None) -> None:
    chosen = choose_codings(accept)
    assert (chosen[0] if chosen else None) == coding


@pytest.mark.parametrize(
    ("accept", "coding"),
    [
        pytest.param("gzip, deflate, br, zstd", "br", id="br"),
        pytest.param("gzip, deflate", "gzip", id="gzip"),
        pytest.param(None, None, id="no-header"),
        pytest.param("br;q=0", None, id="br-q0"),
        pytest.param("identity", None, id="identity"),
    ],
)
@pytest.mark.parametrize("name", [WASM, STDLIB])
async def test_a_precompressed_sibling_is_sent_to_a_client_that_accepts_it(
    raw: TestClient[Any, Any], root: Path, name: str, accept: str | None, coding: str | None
) -> None:
    response = await fetch(raw, f"/{name}", accept)
    body = await response.read()
    assert response.status == 200
    assert response.headers.get("Content-Encoding") == coding
    assert response.headers["Vary"] == "Accept-Encoding, Origin"
    original = (root / name).read_bytes()
    assert decoded(body, coding) == original
    assert int(response.headers["Content-Length"]) == len(body)
    if coding:
        assert len(body) < len(original)
        assert body == (root / f"{name}.{'br' if coding == 'br' else 'gz'}").read_bytes()
    expected_type = "application/wasm" if name == WASM else "application/zip"
    assert response.headers["Content-Type"] == expected_type
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"


async def test_each_coding_has_its_own_etag_and_revalidates(raw: TestClient[Any, Any]) -> None:
    etags = {}
    for accept in ("br", "gzip", None):
        response = await fetch(raw, f"/{WASM}", accept)
        etags[accept] = response.headers["ETag"]
        again = await fetch(raw, f"/{WASM}", accept, headers={"If-None-Match": etags[accept]})
        assert again.status == 304
        assert again.headers["Vary"] == "Accept-Encoding, Origin"
    assert len(set(etags.values())) == 3


async def test_a_sibling_older_than_its_file_is_not_sent(
    raw: TestClient[Any, Any], root: Path
) -> None:
    path = root / WASM
    new = b"\0asm" + b"changed " * 1000
    path.write_bytes(new)
    for suffix in (".br", ".gz"):
        os.utime(path.with_name(path.name + suffix), ns=(0, path.stat().st_mtime_ns - 10**9))
    response = await fetch(raw, f"/{WASM}", "br, gzip")
    assert response.headers.get("Content-Encoding") is None
    assert await response.read() == new


@pytest.mark.parametrize(
    ("accept", "coding"),
    [
        pytest.param("gzip, deflate, br, zstd", "br", id="br"),
        pytest.param("gzip", "gzip", id="gzip"),
        pytest.param("br;q=0", None, id="br-q0"),
        pytest.param(None, None, id="no-header"),
    ],
)
async def test_app_modules_without_a_sibling_are_compressed_on_the_fly(
    raw: TestClient[Any, Any], accept: str | None, coding: str | None
) -> None:
    response = await fetch(raw, f"/{APP_MODULE}", accept)
    body = await response.read()
    assert response.status == 200
    assert response.headers.get("Content-Encoding") == coding
    assert response.headers["Vary"] == "Accept-Encoding, Origin"
    assert response.headers["Content-Type"] == "text/x-python; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-cache"
    assert decoded(body, coding) == APP_SOURCE
    if coding:
        assert len(body) < len(APP_SOURCE) / 4


async def test_on_the_fly_bodies_revalidate_and_follow_edits(
    raw: TestClient[Any, Any], root: Path
) -> None:
    first = await fetch(raw, f"/{APP_MODULE}", "br")
    etag = first.headers["ETag"]
    assert first.headers["Last-Modified"]
    unchanged = await fetch(raw, f"/{APP_MODULE}", "br", headers={"If-None-Match": etag})
    assert unchanged.status == 304
    assert unchanged.headers["Vary"] == "Accept-Encoding, Origin"
    assert await unchanged.read() == b""

    edited = APP_SOURCE + b"# edited\n" * 50
    (root / APP_MODULE).write_bytes(edited)
    os.utime(root / APP_MODULE, ns=(0, (root / APP_MODULE).stat().st_mtime_ns + 10**9))
    after = await fetch(raw, f"/{APP_MODULE}", "br", headers={"If-None-Match": etag})
    assert after.status == 200
    assert after.headers["ETag"] != etag
    assert decoded(await after.read(), "br") == edited


async def test_a_tiny_file_is_sent_plain_when_compressing_does_not_pay(
    raw: TestClient[Any, Any],
) -> None:
    response = await fetch(raw, "/app/main.py", "br, gzip")
    assert response.headers.get("Content-Encoding") is None
    assert response.headers["Vary"] == "Accept-Encoding, Origin"
    assert await response.read() == b"print('hi')"


@pytest.mark.parametrize("name", [WASM, APP_MODULE])
async def test_a_range_request_gets_the_plain_file(
    raw: TestClient[Any, Any], root: Path, name: str
) -> None:
    response = await fetch(raw, f"/{name}", "br, gzip", headers={"Range": "bytes=4-19"})
    assert response.status == 206
    assert response.headers.get("Content-Encoding") is None
    assert response.headers["Content-Range"] == f"bytes 4-19/{(root / name).stat().st_size}"
    assert await response.read() == (root / name).read_bytes()[4:20]


@pytest.mark.parametrize(
    ("name", "accept", "coding"),
    [
        pytest.param(WASM, None, None, id="plain"),
        pytest.param(WASM, "br", "br", id="sibling"),
        pytest.param(APP_MODULE, "gzip", "gzip", id="on-the-fly"),
    ],
)
async def test_head_sends_the_headers_of_get_and_no_body(
    raw: TestClient[Any, Any], name: str, accept: str | None, coding: str | None
) -> None:
    get = await fetch(raw, f"/{name}", accept)
    head = await fetch(raw, f"/{name}", accept, method="HEAD")
    assert head.status == 200
    assert await head.read() == b""
    for header in ("Content-Type", "Content-Length", "Cache-Control", "Vary", "ETag"):
        assert head.headers[header] == get.headers[header], header
    assert head.headers.get("Content-Encoding") == coding
    assert int(head.headers["Content-Length"]) == len(await get.read())


@pytest.mark.parametrize(
    "raw_path",
    [
        pytest.param("/static/..%2fsecret.txt", id="encoded-slash"),
        pytest.param("/app/../secret.txt", id="plain-dot-dot"),
        pytest.param("/static/vendor/pyodide/%2e%2e/%2e%2e/%2e%2e/secret.txt", id="deep"),
        pytest.param("/static/vendor/.precompressed.json", id="manifest"),
    ],
)
async def test_no_path_leaves_the_folders_with_compression_either(
    raw: TestClient[Any, Any], root: Path, raw_path: str
) -> None:
    (root / "secret.txt.br").write_bytes(brotli.compress(b"outside"))
    (root / "static" / "vendor" / ".precompressed.json").write_text("{}")
    response = await fetch(raw, URL(raw_path, encoded=True), "br, gzip")
    assert response.status == 404
    assert b"outside" not in await response.read()
