"""Build the static bundle in dist/: the page, the app package, styles and the vendored runtime.

Any static host can serve dist/ (it must send ``.wasm`` as ``application/wasm`` and ``.mjs`` as
``text/javascript``). ``dist/config.json`` holds the API base URL: empty (the default) means
the same origin; ``API_BASE=https://api.example.test make dist`` points the page elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
PAGE_FILES = ("index.html", "pyscript.toml")


def build(api_base: str) -> None:
    if not (ROOT / "static" / "vendor" / ".stamp").exists():
        raise SystemExit("dist: run `make setup` first (static/vendor/ is missing)")
    if DIST.exists():
        shutil.rmtree(DIST)
    DIST.mkdir()
    for name in PAGE_FILES:
        shutil.copy2(ROOT / name, DIST / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".stamp")
    shutil.copytree(ROOT / "app", DIST / "app", ignore=ignore)
    shutil.copytree(ROOT / "static", DIST / "static", ignore=ignore)
    config = {"apiBase": api_base.rstrip("/")}
    (DIST / "config.json").write_text(json.dumps(config) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in DIST.rglob("*") if p.is_file())
    print(f"dist: {DIST.relative_to(ROOT)}/ ready ({size / 1e6:.1f} MB), apiBase={api_base!r}")


if __name__ == "__main__":
    build(os.environ.get("API_BASE", ""))
