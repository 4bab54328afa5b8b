"""Build the static bundle in dist/: the page, the app package, styles and the vendored runtime.

Any static host can serve dist/ (it must send ``.wasm`` as ``application/wasm`` and ``.mjs`` as
``text/javascript``). ``dist/config.json`` holds the API base URL: empty (the default) means
the same origin; ``API_BASE=https://api.example.test make dist`` points the page elsewhere.
The page carries the reference server's Content-Security-Policy as a ``<meta http-equiv>``
(the API's origin added to ``connect-src`` and ``img-src``), so a plain static host enforces it
too; ``dist/content-security-policy.txt`` is the same policy for a host that sends it as a
header.

Every compressible file has its ``.br`` and ``.gz`` beside it when that pays: static/vendor/'s
come from ``make setup``; the page's own files are compressed here. A host that serves
precompressed files (nginx ``gzip_static``/``brotli_static``, Caddy ``precompressed``) sends
them; any other host sends the plain files, which are all there.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from html import escape
from pathlib import Path
from urllib.parse import urlsplit

import appwheel
from compress import MANIFEST, SIBLING_SUFFIXES, is_compressible, precompress_files

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from server.http.precache import WORKER, Precache  # noqa: E402
from server.http.security import content_security_policy  # noqa: E402

DIST = ROOT / "dist"
PAGE_FILES = ("index.html", "pyscript.toml")
CSP_FILE = "content-security-policy.txt"
_CHARSET = '<meta charset="utf-8">'


def api_origin(api_base: str) -> str | None:
    """The origin of ``api_base`` (``None``: the page's own)."""
    if not api_base:
        return None
    parts = urlsplit(api_base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SystemExit(f"dist: API_BASE {api_base!r} must be like https://api.example.org")
    return f"{parts.scheme}://{parts.netloc}"


def write_policy(target: Path, api_base: str) -> None:
    """The reference server's Content-Security-Policy, with the API's origin: in the page as a
    ``<meta http-equiv>`` (any static host then applies it), and in ``content-security-policy.txt``
    for a host that can send it as a header (which may also forbid framing)."""
    origin = api_origin(api_base)
    page = target / "index.html"
    meta = content_security_policy(origin, in_meta=True)
    html = page.read_text(encoding="utf-8")
    if _CHARSET not in html:
        raise SystemExit("dist: index.html has no <meta charset> to put the policy after")
    tag = f'<meta http-equiv="Content-Security-Policy" content="{escape(meta, quote=True)}">'
    page.write_text(html.replace(_CHARSET, f"{_CHARSET}\n  {tag}", 1), encoding="utf-8")
    (target / CSP_FILE).write_text(content_security_policy(origin) + "\n", encoding="utf-8")


def build(api_base: str, target: Path = DIST) -> Path:
    """The bundle in ``target`` (emptied first); its path."""
    if not (ROOT / "static" / "vendor" / ".stamp").exists():
        raise SystemExit("dist: run `make setup` first (static/vendor/ is missing)")
    appwheel.build()
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in PAGE_FILES:
        shutil.copy2(ROOT / name, target / name)
    write_policy(target, api_base)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".stamp", appwheel.STAMP.name, MANIFEST)
    # NOTE: the page's script only: every other module is in static/app/'s wheel.
    (target / "app").mkdir()
    shutil.copy2(ROOT / "app" / "main.py", target / "app" / "main.py")
    shutil.copytree(ROOT / "static", target / "static", ignore=ignore)
    config = {"apiBase": api_base.rstrip("/")}
    (target / "config.json").write_text(json.dumps(config) + "\n", encoding="utf-8")
    # NOTE: the service worker with this bundle's files and their hashes written in
    shutil.copy2(ROOT / WORKER, target / WORKER)
    (target / WORKER).write_text(Precache(target, {}).worker(), encoding="utf-8")
    # NOTE: static/vendor/ arrives with its siblings (tools/vendor.py); the rest changes with
    # every edit of the app, so it is compressed now.
    vendor = target / "static" / "vendor"
    own = [
        p
        for p in target.rglob("*")
        if p.is_file() and is_compressible(p) and not p.is_relative_to(vendor)
    ]
    precompress_files(own)
    files = [p for p in target.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    plain = sum(p.stat().st_size for p in files if p.suffix not in SIBLING_SUFFIXES)
    print(
        f"dist: {target}/ ready ({size / 1e6:.1f} MB: {plain / 1e6:.1f} MB"
        f" of files, the rest their .br/.gz), apiBase={api_base!r}"
    )
    return target


if __name__ == "__main__":
    build(os.environ.get("API_BASE", ""))
