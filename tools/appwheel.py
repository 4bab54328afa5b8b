"""Build the app's wheel: every module of ``app/`` (but ``main.py``), precompiled to ``.pyc``.

The page loads it with the runtime's own packages (``pyscript.toml``'s ``packages`` lists its
path), so it is fetched in parallel with them, in one request, and imported without compiling:
38 files fetched one by one after the interpreter started and compiled in the browser cost the
boot ~250 ms here. ``app/main.py`` stays a file: it is the page's script, which imports the rest.

Run by ``make setup`` (so by ``make run``, ``make test``, ``make bench`` and ``make dist``) and by
the end-to-end tests' set-up: it rebuilds only when a module of ``app/`` changed (the sources'
sha256 is kept beside the wheel). The wheel is a build output, not in git; it is served with
``no-cache`` (it is outside ``static/vendor/``), so a browser revalidates it on each visit.

NOTE: ``python tools/appwheel.py`` needs Node (``tools/precompile.mjs`` compiles inside the same
Pyodide the page runs, so the bytecode matches it), like ``tools/vendor.py``.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app"
OUT = ROOT / "static" / "app"
NAME = "riacho_app"
VERSION = "0.0.0"
WHEEL = f"{NAME}-{VERSION}-py3-none-any.whl"
URL = f"./static/app/{WHEEL}"  # NOTE: as pyscript.toml's packages list it
STAMP = OUT / ".sources-sha256"
SCRIPT = "main.py"  # the page's script: not in the wheel (importing it would boot a second app)
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
# NOTE: a fixed date keeps the wheel's bytes reproducible.
DATE = (2026, 1, 1, 0, 0, 0)


def app_modules(app: Path = APP) -> list[Path]:
    """The modules the wheel holds, relative to the repository: ``app/**/*.py`` but main.py."""
    modules = sorted(path for path in app.rglob("*.py") if "__pycache__" not in path.parts)
    return [path for path in modules if path.relative_to(app).as_posix() != SCRIPT]


def sources_digest(app: Path = APP) -> str:
    """sha256 over the modules' paths and bytes (what decides a rebuild)."""
    digest = hashlib.sha256()
    for path in app_modules(app):
        digest.update(path.relative_to(app.parent).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def write_source_wheel(target: Path, app: Path = APP) -> int:
    """A wheel of the modules as source (``precompile.mjs`` then compiles it); their count."""
    modules = app_modules(app)
    metadata = f"Metadata-Version: 2.1\nName: {NAME.replace('_', '-')}\nVersion: {VERSION}\n"
    wheel = "Wheel-Version: 1.0\nGenerator: riacho\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    # NOTE: stored, not deflated: the server's brotli/gzip compresses the whole file better.
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as archive:
        for path in modules:
            name = path.relative_to(app.parent).as_posix()
            archive.writestr(zipfile.ZipInfo(name, DATE), path.read_bytes())
        for name, text in (("METADATA", metadata), ("WHEEL", wheel), ("top_level.txt", "app\n")):
            archive.writestr(zipfile.ZipInfo(f"{DIST_INFO}/{name}", DATE), text)
        # NOTE: an empty RECORD: Pyodide installs without checking it, as pip would not.
        archive.writestr(zipfile.ZipInfo(f"{DIST_INFO}/RECORD", DATE), "")
    return len(modules)


def build(*, force: bool = False) -> Path:
    """The wheel in static/app/, rebuilt when the sources changed (or ``force``)."""
    wheel = OUT / WHEEL
    digest = sources_digest()
    if not force and wheel.exists() and STAMP.exists() and STAMP.read_text().strip() == digest:
        return wheel
    node = shutil.which("node")
    if node is None:
        raise SystemExit("appwheel: node is not installed (Debian: apt-get install nodejs)")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / WHEEL
        count = write_source_wheel(source)
        compiled = Path(work) / "compiled" / WHEEL
        compiled.parent.mkdir()
        precompile = ROOT / "tools" / "precompile.mjs"
        subprocess.run([node, str(precompile), str(source), str(compiled)], check=True)
        shutil.move(compiled, wheel)
    sys.path.insert(0, str(ROOT / "tools"))
    from compress import precompress_files  # NOTE: tools/ is not a package

    precompress_files([wheel])
    STAMP.write_text(digest + "\n")
    print(f"appwheel: {wheel.relative_to(ROOT)} ({count} modules, {wheel.stat().st_size:,} bytes)")
    return wheel


if __name__ == "__main__":
    build(force="--force" in sys.argv[1:])
