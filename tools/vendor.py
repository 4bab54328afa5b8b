"""Vendor the browser runtime into static/vendor/: PyScript, Pyodide, KaTeX and the app's wheels.

Nothing is fetched from a CDN at run time: the page loads only what this script puts under
static/vendor/. Inputs are pinned: npm packages by package-lock.json (exact versions and
integrity; every package in the lock must be installed at its locked version, or `npm ci` runs),
wheels by tools/browser-wheels.toml (exact versions and sha256). A second run with everything
present does nothing and says so.

NOTE: axe-core is installed by `npm ci` but not copied: only the end-to-end tests use it, reading
node_modules/axe-core/axe.min.js and injecting it with Playwright.

NOTE: KaTeX ships each font as woff2, woff and ttf, and its CSS lists woff2 first in every
@font-face; browsers load the first format they support, so only the woff2 files are copied
(static/vendor/katex/fonts/) and the CSS is copied unchanged. The copy fails if a KaTeX update
lists another format first.

NOTE: Pyodide's own pyodide-lock.json lists hashes of Pyodide's repacked wheels, which differ
from the registry's, and a pydantic-core with no wasm wheel on the registry; keeping it makes
loadPackage fail silently. We write a trimmed lock listing only the wheels shipped here.

NOTE: the standard library zip and the wheels are precompiled to .pyc inside Pyodide under
Node (tools/precompile.mjs): npm's Pyodide ships sources only, and compiling them on every
boot costs the page seconds. The lock then lists the sha256 of the files actually shipped.

NOTE: then the standard library zip and the pure wheels are trimmed to the modules the page
imports (tools/trim.py): a trace inside Pyodide under Node (tools/trace.mjs, tools/trace.py)
records them, a safety list adds what is imported lazily; the rest of each archive is left out
and the lock rewritten with the trimmed files' sha256. A first visit saves about 1.9 MB. The
stamp includes the trace and trim tools and the app's import statements, so a new import in
app/ traces again.

NOTE: last, every compressible file under static/vendor/ gets a ``.br`` and a ``.gz`` sibling
(tools/compress.py) when that pays; servers send them to browsers that accept the coding: a
first visit moves about 6.1 MB instead of 11 MB.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from compress import MANIFEST, manifest_siblings, precompress_tree, read_manifest
from trim import Trimmed, app_imports, keep_set, safety_patterns, trim_archive

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "static" / "vendor"
PYODIDE_OUT = VENDOR / "pyodide"
PYSCRIPT_OUT = VENDOR / "pyscript"
KATEX_OUT = VENDOR / "katex"
CODE_OUT = VENDOR / "code"  # NOTE: for the code sandbox (static/code/), loaded at a first Run
NODE_MODULES = ROOT / "node_modules"
NPM_LOCK = ROOT / "package-lock.json"
WHEEL_CACHE = ROOT / ".cache" / "wheels"
WHEELS_SPEC = ROOT / "tools" / "browser-wheels.toml"
PYSCRIPT_CONFIG = ROOT / "pyscript.toml"
TRACE_OUT = ROOT / ".cache" / "trace.json"
TRIM_REPORT = ROOT / ".cache" / "trim.json"
STAMP = VENDOR / ".stamp"
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm")
STDLIB_ZIP = "python_stdlib.zip"
BROWSER_PYTHON = "3.14"
KATEX_FILES = ("katex.min.js", "katex.min.css")
KATEX_CSS = "katex.min.css"
FONT_FACE = re.compile(r"@font-face\s*\{([^}]*)\}")
FIRST_SRC_URL = re.compile(r"""\bsrc\s*:\s*url\(\s*['"]?([^'")]+?)['"]?\s*\)""")


class VendorError(Exception):
    """A set-up step failed; the message tells the user what to do."""


@dataclass(frozen=True, slots=True)
class Wheel:
    """One pinned wheel shipped to the browser."""

    name: str
    version: str
    file: str
    sha256: str
    imports: list[str]
    depends: list[str]
    platform: str | None = None
    trim: bool = True  # NOTE: false ships it whole (see tools/trim.py)


def load_wheels() -> list[Wheel]:
    spec = tomllib.loads(WHEELS_SPEC.read_text(encoding="utf-8"))
    return [Wheel(name=name, **fields) for name, fields in spec["wheels"].items()]


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def inputs_digest() -> str:
    digest = hashlib.sha256()
    tools = ROOT / "tools"
    names = ("vendor.py", "precompile.py", "precompile.mjs", "compress.py")
    names += ("trim.py", "trace.py", "trace.mjs")
    for path in (NPM_LOCK, WHEELS_SPEC, *(tools / name for name in names)):
        digest.update(path.read_bytes())
    # NOTE: what the trim keeps follows the packages the page loads and what the app imports:
    # a new package or import traces again (other edits of app/ or pyscript.toml do not).
    digest.update(json.dumps([page_packages(), app_imports(ROOT / "app")]).encode())
    return digest.hexdigest()


def katex_fonts(css: str) -> list[str]:
    """The font files a KaTeX stylesheet loads: the first ``url()`` of each @font-face ``src``.

    Raises VendorError if one is not woff2: copying only woff2 would then break that font.
    """
    fonts: list[str] = []
    for face in FONT_FACE.findall(css):
        match = FIRST_SRC_URL.search(face)
        if match is None:
            raise VendorError(f"{KATEX_CSS}: an @font-face without src url(): {face[:80]}")
        url = match.group(1)
        if not url.endswith(".woff2") or not url.startswith("fonts/") or ".." in url:
            raise VendorError(
                f"{KATEX_CSS}: an @font-face loads {url} first, not fonts/*.woff2;"
                " tools/vendor.py copies only the woff2 fonts"
            )
        if url not in fonts:
            fonts.append(url)
    if not fonts:
        raise VendorError(f"{KATEX_CSS} lists no @font-face; has KaTeX's layout changed?")
    return fonts


def expected_outputs(wheels: list[Wheel]) -> list[Path]:
    outputs = [PYODIDE_OUT / name for name in (*PYODIDE_FILES, STDLIB_ZIP, "pyodide-lock.json")]
    outputs += [CODE_OUT / STDLIB_ZIP]
    outputs += [PYODIDE_OUT / wheel.file for wheel in wheels]
    outputs += [PYSCRIPT_OUT / "core.js", PYSCRIPT_OUT / "core.css"]
    outputs += [KATEX_OUT / name for name in KATEX_FILES]
    # NOTE: the fonts are those the vendored CSS names; without that CSS the check fails anyway.
    css = KATEX_OUT / KATEX_CSS
    if css.exists():
        outputs += [KATEX_OUT / font for font in katex_fonts(css.read_text(encoding="utf-8"))]
    # NOTE: which siblings pay depends on the bytes, so the compression step's manifest lists
    # them; a missing manifest or sibling makes the next run redo the step.
    outputs += [VENDOR / MANIFEST, *manifest_siblings(VENDOR)]
    return outputs


def is_up_to_date(wheels: list[Wheel]) -> bool:
    if not STAMP.exists() or STAMP.read_text(encoding="utf-8") != inputs_digest():
        return False
    return all(path.exists() for path in expected_outputs(wheels))


def run(command: list[str]) -> None:
    print("vendor: $", " ".join(command), flush=True)
    completed = subprocess.run(command, cwd=ROOT, check=False)
    if completed.returncode != 0:
        raise VendorError(f"command failed with exit code {completed.returncode}: {command[0]}")


def installed_version(package: str) -> str | None:
    """The version installed under node_modules/``package`` (a nested path is fine), or None."""
    manifest = NODE_MODULES / package / "package.json"
    if not manifest.exists():
        return None
    return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])


def locked_packages() -> dict[str, str]:
    """Every package package-lock.json installs (path under node_modules/) and its version.

    Optional packages (platform-specific builds) are left out: npm may rightly skip them.
    """
    lock = json.loads(NPM_LOCK.read_text(encoding="utf-8"))
    prefix = "node_modules/"
    return {
        path.removeprefix(prefix): str(entry["version"])
        for path, entry in lock["packages"].items()
        if path.startswith(prefix) and not entry.get("optional") and not entry.get("link")
    }


def missing_packages() -> list[str]:
    """The locked packages not installed at their locked version, as ``name@version``."""
    return [f"{p}@{v}" for p, v in locked_packages().items() if installed_version(p) != v]


def npm_install() -> None:
    if not missing_packages():
        print("vendor: npm packages already installed", flush=True)
        return
    npm = shutil.which("npm")
    if npm is None:
        raise VendorError(
            "npm is not installed: install Node.js 20+ with npm"
            " (Debian: apt-get install nodejs npm)"
        )
    run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"])
    missing = missing_packages()
    if missing:
        raise VendorError(f"npm ci did not install {', '.join(missing)}; is package-lock right?")


def copy_runtime() -> None:
    PYODIDE_OUT.mkdir(parents=True, exist_ok=True)
    for name in PYODIDE_FILES:
        shutil.copy2(NODE_MODULES / "pyodide" / name, PYODIDE_OUT / name)
    if PYSCRIPT_OUT.exists():
        shutil.rmtree(PYSCRIPT_OUT)
    # NOTE: source maps are left out: browsers fetch them only with developer tools open.
    shutil.copytree(
        NODE_MODULES / "@pyscript" / "core" / "dist",
        PYSCRIPT_OUT,
        ignore=shutil.ignore_patterns("*.map"),
    )
    copy_katex()


def copy_katex() -> None:
    """KaTeX's script, stylesheet and the woff2 fonts the stylesheet loads first."""
    dist = NODE_MODULES / "katex" / "dist"
    fonts = katex_fonts((dist / KATEX_CSS).read_text(encoding="utf-8"))
    if KATEX_OUT.exists():
        shutil.rmtree(KATEX_OUT)
    (KATEX_OUT / "fonts").mkdir(parents=True)
    for name in (*KATEX_FILES, *fonts):
        shutil.copy2(dist / name, KATEX_OUT / name)


def download_wheel(wheel: Wheel) -> Path:
    cached = WHEEL_CACHE / wheel.file
    if cached.exists() and file_sha256(cached) == wheel.sha256:
        return cached
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
    command += ["--python-version", BROWSER_PYTHON, "--dest", str(WHEEL_CACHE)]
    if wheel.platform:
        command += ["--platform", wheel.platform, "--implementation", "cp"]
    run([*command, f"{wheel.name}=={wheel.version}"])
    if not cached.exists():
        raise VendorError(
            f"pip did not produce {wheel.file}; is the pin in {WHEELS_SPEC.name} right?"
        )
    actual = file_sha256(cached)
    if actual != wheel.sha256:
        cached.unlink()
        raise VendorError(f"hash mismatch for {wheel.file}: expected {wheel.sha256}, got {actual}")
    return cached


def find_node() -> str:
    node = shutil.which("node")
    if node is None:
        raise VendorError(
            "node is not installed: install Node.js 20+ (Debian: apt-get install nodejs)"
        )
    return node


def precompile(sources: list[Path]) -> None:
    """Write each source zip/wheel, compiled to .pyc, under the same name in PYODIDE_OUT."""
    pairs = [str(path) for source in sources for path in (source, PYODIDE_OUT / source.name)]
    run([find_node(), str(ROOT / "tools" / "precompile.mjs"), *pairs])


def keep_whole_stdlib() -> None:
    """A copy of the precompiled standard library, whole, for code run in the page (SPEC §13):
    the page's own copy is trimmed to what the page imports, and code may import any module."""
    CODE_OUT.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(PYODIDE_OUT / STDLIB_ZIP, CODE_OUT / STDLIB_ZIP)


def page_packages() -> list[str]:
    """The packages pyscript.toml loads with the runtime, by name (not the app's own wheel,
    which it lists by path: tools/appwheel.py)."""
    config = tomllib.loads(PYSCRIPT_CONFIG.read_text(encoding="utf-8"))
    return [str(name) for name in config.get("packages", []) if not str(name).endswith(".whl")]


def trace() -> list[str]:
    """The modules the page imports, recorded inside Pyodide (tools/trace.mjs) on PYODIDE_OUT."""
    TRACE_OUT.parent.mkdir(parents=True, exist_ok=True)
    TRACE_OUT.unlink(missing_ok=True)
    script = str(ROOT / "tools" / "trace.mjs")
    run([find_node(), script, str(PYODIDE_OUT), str(ROOT), str(TRACE_OUT), *page_packages()])
    if not TRACE_OUT.exists():
        raise VendorError("the trace wrote no module list; see the output above")
    return [str(name) for name in json.loads(TRACE_OUT.read_text(encoding="utf-8"))]


def trimmed_archives(wheels: list[Wheel]) -> list[Path]:
    """The shipped archives trimmed: the standard library zip and the wheels marked so."""
    return [PYODIDE_OUT / STDLIB_ZIP, *(PYODIDE_OUT / w.file for w in wheels if w.trim)]


def trim_shipped(wheels: list[Wheel], traced: list[str]) -> list[Trimmed]:
    """Leave out of each trimmed archive what the trace and the safety list do not name."""
    keep = keep_set(traced)
    results = [trim_archive(path, keep) for path in trimmed_archives(wheels)]
    for result in results:
        print(
            f"vendor: trim: {result.name}: {result.before:,} -> {result.after:,} bytes"
            f" ({len(result.dropped)} entries left out)",
            flush=True,
        )
    report = {
        "safety": safety_patterns(),
        "traced": traced,
        "dropped": {result.name: result.dropped for result in results},
    }
    TRIM_REPORT.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return results


def lock_entry(wheel: Wheel) -> dict[str, object]:
    return {
        "name": wheel.name,
        "version": wheel.version,
        "file_name": wheel.file,
        "install_dir": "site",
        "sha256": file_sha256(PYODIDE_OUT / wheel.file),
        "package_type": "package",
        "imports": wheel.imports,
        "depends": wheel.depends,
        "unvendored_tests": False,
    }


def write_lock(wheels: list[Wheel]) -> None:
    original = json.loads(
        (NODE_MODULES / "pyodide" / "pyodide-lock.json").read_text(encoding="utf-8")
    )
    lock = {"info": original["info"], "packages": {w.name: lock_entry(w) for w in wheels}}
    (PYODIDE_OUT / "pyodide-lock.json").write_text(
        json.dumps(lock, indent=1) + "\n", encoding="utf-8"
    )


def freshen_siblings() -> None:
    """Give each precompressed sibling older than its file the file's mtime.

    NOTE: the reference server sends a sibling only if it is not older than its file
    (server/http/static.py). This step writes the archives again on every run, often with the same
    bytes: compress.py then rightly keeps their siblings (same sha256, per its manifest), which
    are now older than the files, and the server sent the zips and wheels uncompressed. The
    manifest says the siblings match the files' bytes: only their dates are behind.
    """
    for name, (_, siblings) in read_manifest(VENDOR).items():
        original = (VENDOR / name).stat()
        for sibling_name in siblings:
            sibling = VENDOR / sibling_name
            if sibling.stat().st_mtime_ns < original.st_mtime_ns:
                os.utime(sibling, ns=(original.st_atime_ns, original.st_mtime_ns))


def vendor() -> None:
    wheels = load_wheels()
    if is_up_to_date(wheels):
        print("vendor: static/vendor is up to date; nothing to download", flush=True)
        return
    npm_install()
    copy_runtime()
    sources = [NODE_MODULES / "pyodide" / STDLIB_ZIP, *(download_wheel(w) for w in wheels)]
    precompile(sources)
    keep_whole_stdlib()
    # NOTE: the trace loads the packages through the lock (hash-checked); the lock is written
    # again for the trimmed files, before they are compressed.
    write_lock(wheels)
    trim_shipped(wheels, trace())
    write_lock(wheels)
    precompress_tree(VENDOR, log=lambda line: print(f"vendor: {line}", flush=True))
    freshen_siblings()
    STAMP.write_text(inputs_digest(), encoding="utf-8")
    print(f"vendor: runtime ready in {VENDOR.relative_to(ROOT)}", flush=True)


def main() -> int:
    try:
        vendor()
    except VendorError as error:
        print(f"vendor: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
