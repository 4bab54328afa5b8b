"""The page and its files: ``/``, ``index.html``, ``pyscript.toml``, ``config.json``, ``app/``,
``static/``, with explicit MIME types and cache headers; no path can leave those folders."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

MIME_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json; charset=utf-8",
    ".map": "application/json; charset=utf-8",
    ".toml": "text/plain; charset=utf-8",
    ".py": "text/x-python; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/plain; charset=utf-8",
    ".svg": "image/svg+xml; charset=utf-8",
    ".wasm": "application/wasm",
    ".whl": "application/octet-stream",
    ".zip": "application/zip",
    ".tar": "application/x-tar",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".data": "application/octet-stream",
}
IMMUTABLE = "public, max-age=31536000, immutable"
DEFAULT_CONFIG = b'{"apiBase": ""}'


def _safe_path(base: Path, relative: str) -> Path:
    """``base/relative`` if every segment is a plain name (no ``..``, dot files, backslashes)."""
    segments = relative.split("/")
    for segment in segments:
        if not segment or segment.startswith(".") or "\\" in segment or "\x00" in segment:
            raise web.HTTPNotFound()
    path = base.joinpath(*segments)
    if not path.is_file():
        raise web.HTTPNotFound()
    return path


def file_response(path: Path, request_path: str) -> web.FileResponse:
    """A file with its MIME type and cache policy (immutable under ``/static/vendor/``)."""
    mime = MIME_TYPES.get(path.suffix.lower(), "application/octet-stream")
    cache = IMMUTABLE if request_path.startswith("/static/vendor/") else "no-cache"
    return web.FileResponse(path, headers={"Content-Type": mime, "Cache-Control": cache})


class PageFiles:
    """Handlers serving the page files under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    async def page(self, request: web.Request) -> web.StreamResponse:
        return file_response(_safe_path(self.root, "index.html"), request.path)

    async def top_file(self, request: web.Request) -> web.StreamResponse:
        return file_response(_safe_path(self.root, request.path.lstrip("/")), request.path)

    async def in_folder(self, request: web.Request) -> web.StreamResponse:
        folder, relative = request.match_info["folder"], request.match_info["path"]
        return file_response(_safe_path(self.root / folder, relative), request.path)

    async def config_json(self, request: web.Request) -> web.StreamResponse:
        path = self.root / "config.json"
        if path.is_file():
            return file_response(path, request.path)
        headers = {"Content-Type": MIME_TYPES[".json"], "Cache-Control": "no-cache"}
        return web.Response(body=DEFAULT_CONFIG, headers=headers)


def add_static_routes(app: web.Application, root: Path) -> None:
    """Register the page routes under ``root`` (the repository root by default)."""
    files = PageFiles(root)
    app.router.add_routes(
        [
            web.get("/", files.page),
            web.get("/index.html", files.top_file),
            web.get("/pyscript.toml", files.top_file),
            web.get("/config.json", files.config_json),
            web.get("/{folder:app|static}/{path:.+}", files.in_folder),
        ]
    )
