"""The page files: MIME types, cache headers, config.json, and no way out of the folders."""

from __future__ import annotations

from pathlib import Path

import pytest
from yarl import URL

from tests.server.conftest import MakeApi, StartServer
from tests.server.helpers import Api

FILES = {
    "index.html": "<!doctype html><title>Riacho</title>",
    "pyscript.toml": 'name = "riacho"',
    "app/main.py": "print('hi')",
    "static/app.css": "body {}",
    "static/icon.svg": "<svg/>",
    "static/data.json": "{}",
    "static/boot.js": "1",
    "static/vendor/pyodide/pyodide.mjs": "export {}",
    "static/vendor/pyodide/pyodide.asm.wasm": "\0asm",
    "static/vendor/pyodide/python_stdlib.zip": "PK",
    "static/vendor/wheels/pydantic-2.14.4-py3-none-any.whl": "PK",
    "secret.txt": "outside",
}


@pytest.fixture
async def page(tmp_path: Path, make_api: MakeApi, start_server: StartServer) -> Api:
    root = tmp_path / "site"
    for name, content in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    return await make_api(None, on=await start_server(static_root=root))


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
