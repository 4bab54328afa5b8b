"""The page and its files: ``/``, ``index.html``, ``pyscript.toml``, ``config.json``, ``app/``,
``static/``, with explicit MIME types and cache headers; no path can leave those folders.

Compressed bodies, for a client whose ``Accept-Encoding`` accepts the coding (br before gzip,
q=0 honoured; no header, no compression): a file's precompressed sibling ``<file>.br`` or
``<file>.gz`` when there is one (tools/vendor.py writes them for static/vendor/), else, for a
text file, the file compressed here and kept in memory until it changes. A Range request gets
the plain file. Every answer says ``Vary: Accept-Encoding``.
"""

from __future__ import annotations

import asyncio
import gzip
import math
import os
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

import brotli  # type: ignore[import-untyped]
from aiohttp import hdrs, web

from server.http.precache import Precache

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
    ".webmanifest": "application/manifest+json; charset=utf-8",
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
# The codings served, in the server's order of preference, with their siblings' suffix.
CODINGS = {"br": ".br", "gzip": ".gz"}
CODING_ALIASES = {"x-gzip": "gzip"}
# Text compressed on the fly when it has no sibling (the app's files change with every edit).
ON_THE_FLY = frozenset(
    {
        ".html",
        ".js",
        ".mjs",
        ".css",
        ".json",
        ".map",
        ".toml",
        ".py",
        ".txt",
        ".md",
        ".svg",
        ".webmanifest",
    }
)
ON_THE_FLY_MAX_BYTES = 1 << 20
# A compressed body is sent only if it is smaller than this share of the file.
MIN_GAIN = 0.9

# NOTE: aiohttp's FileResponse looks for .br/.gz siblings itself, matching codings as
# substrings of Accept-Encoding ("br;q=0" gets br) and saying Vary only on compressed answers.
# _ExactFile turns that off through this hook; fail at start if an aiohttp upgrade renames it.
if not hasattr(web.FileResponse, "_get_file_path_stat_encoding"):
    raise ImportError("aiohttp.web.FileResponse changed: review server/http/static.py's _ExactFile")


class _ExactFile(web.FileResponse):
    """A FileResponse that sends its own path, never a sibling aiohttp picks."""

    def _get_file_path_stat_encoding(
        self, accept_encoding: str
    ) -> tuple[Path | None, os.stat_result, str | None]:
        st = self._path.stat()
        return (self._path if S_ISREG(st.st_mode) else None), st, None


def accepted_codings(header: str | None) -> dict[str, float]:
    """The codings of an ``Accept-Encoding`` value and their q (lower-cased; 0: refused).

    A q that does not parse, or lies outside 0..1, counts as 0; a coding named twice keeps its
    lowest q.
    """
    codings: dict[str, float] = {}
    for item in (header or "").split(","):
        name, *params = item.split(";")
        name = name.strip().lower()
        if not name:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
                if not (math.isfinite(q) and 0.0 <= q <= 1.0):
                    q = 0.0
        name = CODING_ALIASES.get(name, name)
        codings[name] = min(q, codings.get(name, q))
    return codings


def choose_codings(header: str | None) -> list[str]:
    """The codings of CODINGS a client accepts, best first (its q, then br before gzip)."""
    accepted = accepted_codings(header)
    default = accepted.get("*", 0.0)
    ranked = [(accepted.get(coding, default), coding) for coding in CODINGS]
    order = list(CODINGS)
    ranked.sort(key=lambda pair: (-pair[0], order.index(pair[1])))
    return [coding for q, coding in ranked if q > 0.0]


def compress(data: bytes, coding: str) -> bytes:
    """``data`` in ``coding`` (br or gzip), at the precompressed files' settings."""
    if coding == "br":
        compressed: bytes = brotli.compress(data, quality=11)
        return compressed
    return gzip.compress(data, compresslevel=9, mtime=0)


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


def _fresh_sibling(path: Path, st: os.stat_result, coding: str) -> Path | None:
    """``path``'s precompressed sibling in ``coding``, unless missing or older than ``path``."""
    candidate = path.with_name(path.name + CODINGS[coding])
    try:
        sibling = candidate.stat()
    except OSError:
        return None
    if not S_ISREG(sibling.st_mode) or sibling.st_mtime_ns < st.st_mtime_ns:
        return None
    return candidate


@dataclass(frozen=True, slots=True)
class _Compressed:
    """One file compressed in one coding; ``body`` None when compressing does not pay."""

    mtime_ns: int
    size: int
    body: bytes | None


def _compress_file(path: Path, coding: str) -> bytes | None:
    data = path.read_bytes()
    body = compress(data, coding)
    return body if len(body) < MIN_GAIN * len(data) else None


class OnTheFly:
    """Text files compressed on request, kept per path and coding until the file changes."""

    def __init__(self) -> None:
        self._cache: dict[tuple[Path, str], _Compressed] = {}

    async def body(self, path: Path, st: os.stat_result, coding: str) -> bytes | None:
        """``path`` (as ``st`` found it) in ``coding``, or None if that does not pay."""
        entry = self._cache.get((path, coding))
        if entry is None or (entry.mtime_ns, entry.size) != (st.st_mtime_ns, st.st_size):
            loop = asyncio.get_running_loop()
            body = await loop.run_in_executor(None, _compress_file, path, coding)
            entry = _Compressed(st.st_mtime_ns, st.st_size, body)
            self._cache[(path, coding)] = entry
        return entry.body


def _not_modified(request: web.Request, etag: str, mtime: float) -> bool:
    """Whether the client's cached copy (``If-None-Match``, else ``If-Modified-Since``) holds."""
    if (etags := request.if_none_match) is not None:
        return any(tag.value in (etag, "*") for tag in etags)
    since = request.if_modified_since
    return since is not None and mtime <= since.timestamp()


class PageFiles:
    """Handlers serving the page files under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.on_the_fly = OnTheFly()
        self.precache = Precache(root, {"config.json": DEFAULT_CONFIG})

    async def respond(self, request: web.Request, path: Path) -> web.StreamResponse:
        """``path`` with its MIME type, cache policy (immutable under ``/static/vendor/``) and,
        when the client accepts it, a compressed body."""
        mime = MIME_TYPES.get(path.suffix.lower(), "application/octet-stream")
        cache = IMMUTABLE if request.path.startswith("/static/vendor/") else "no-cache"
        headers = {"Content-Type": mime, "Cache-Control": cache, "Vary": "Accept-Encoding"}
        if hdrs.RANGE in request.headers:
            return _ExactFile(path, headers=headers)
        codings = choose_codings(request.headers.get(hdrs.ACCEPT_ENCODING))
        if not codings:
            return _ExactFile(path, headers=headers)
        st = path.stat()
        for coding in codings:
            sibling = _fresh_sibling(path, st, coding)
            if sibling is not None:
                return _ExactFile(sibling, headers={**headers, "Content-Encoding": coding})
        if path.suffix.lower() in ON_THE_FLY and st.st_size <= ON_THE_FLY_MAX_BYTES:
            for coding in codings:
                body = await self.on_the_fly.body(path, st, coding)
                if body is not None:
                    return self._compressed(request, headers, st, coding, body)
        return _ExactFile(path, headers=headers)

    @staticmethod
    def _compressed(
        request: web.Request, headers: dict[str, str], st: os.stat_result, coding: str, body: bytes
    ) -> web.Response:
        etag = f"{st.st_mtime_ns:x}-{st.st_size:x}-{coding}"
        if _not_modified(request, etag, st.st_mtime):
            response = web.Response(status=304, headers=headers)
        else:
            response = web.Response(body=body, headers={**headers, "Content-Encoding": coding})
        response.etag = etag
        response.last_modified = st.st_mtime
        return response

    async def page(self, request: web.Request) -> web.StreamResponse:
        return await self.respond(request, _safe_path(self.root, "index.html"))

    async def top_file(self, request: web.Request) -> web.StreamResponse:
        return await self.respond(request, _safe_path(self.root, request.path.lstrip("/")))

    async def in_folder(self, request: web.Request) -> web.StreamResponse:
        folder, relative = request.match_info["folder"], request.match_info["path"]
        return await self.respond(request, _safe_path(self.root / folder, relative))

    async def worker(self, request: web.Request) -> web.Response:
        """``sw.js`` with this build's files written in; revalidated on every load."""
        loop = asyncio.get_running_loop()
        text = await loop.run_in_executor(None, self.precache.worker)
        headers = {"Content-Type": MIME_TYPES[".js"], "Cache-Control": "no-cache"}
        return web.Response(body=text.encode(), headers=headers)

    async def config_json(self, request: web.Request) -> web.StreamResponse:
        path = self.root / "config.json"
        if path.is_file():
            return await self.respond(request, path)
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
            web.get("/sw.js", files.worker),
            web.get("/{folder:app|static}/{path:.+}", files.in_folder),
        ]
    )
