"""The vendoring step: pinned inputs, checked hashes, a trimmed lock, archives trimmed to the
modules the page imports, precompressed siblings, idempotent re-runs."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
import tomllib
import zipfile
import zipimport
from pathlib import Path

import brotli  # type: ignore[import-untyped]
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import appwheel
import compress
import trim
import vendor

WHEEL = vendor.Wheel(
    name="demo-pkg",
    version="1.0",
    file="demo_pkg-1.0-py3-none-any.whl",
    sha256=hashlib.sha256(b"good wheel").hexdigest(),
    imports=["demo_pkg"],
    depends=["other"],
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(vendor, "WHEEL_CACHE", tmp_path)
    return tmp_path


def _pip_writes(cache: Path, content: bytes, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Replace the pip call with one that 'downloads' ``content``; the calls made."""
    calls: list[list[str]] = []

    def fake_run(command: list[str]) -> None:
        calls.append(command)
        (cache / WHEEL.file).write_bytes(content)

    monkeypatch.setattr(vendor, "run", fake_run)
    return calls


def test_a_wheel_with_the_pinned_hash_is_kept(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _pip_writes(cache, b"good wheel", monkeypatch)
    assert vendor.download_wheel(WHEEL) == cache / WHEEL.file
    assert calls and calls[0][-1] == "demo-pkg==1.0"


def test_a_wheel_with_another_hash_is_refused_and_removed(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pip_writes(cache, b"tampered wheel", monkeypatch)
    with pytest.raises(vendor.VendorError, match="hash mismatch"):
        vendor.download_wheel(WHEEL)
    assert not (cache / WHEEL.file).exists()


def test_a_cached_wheel_is_not_downloaded_again(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (cache / WHEEL.file).write_bytes(b"good wheel")
    calls = _pip_writes(cache, b"good wheel", monkeypatch)
    vendor.download_wheel(WHEEL)
    assert calls == []


def test_the_lock_lists_each_shipped_wheel_with_its_real_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    modules = tmp_path / "node_modules" / "pyodide"
    modules.mkdir(parents=True)
    info = {"abi_version": "2026_0", "python": "3.14.2"}
    (modules / "pyodide-lock.json").write_text(json.dumps({"info": info, "packages": {"x": {}}}))
    out = tmp_path / "out"
    out.mkdir()
    (out / WHEEL.file).write_bytes(b"precompiled bytes")
    monkeypatch.setattr(vendor, "NODE_MODULES", tmp_path / "node_modules")
    monkeypatch.setattr(vendor, "PYODIDE_OUT", out)

    vendor.write_lock([WHEEL])

    lock = json.loads((out / "pyodide-lock.json").read_text())
    assert lock["info"] == info
    assert list(lock["packages"]) == ["demo-pkg"]
    entry = lock["packages"]["demo-pkg"]
    assert entry["sha256"] == hashlib.sha256(b"precompiled bytes").hexdigest()
    assert (entry["file_name"], entry["imports"], entry["depends"]) == (
        WHEEL.file,
        ["demo_pkg"],
        ["other"],
    )


def test_the_pinned_wheels_are_the_ones_the_page_imports() -> None:
    names = {wheel.name for wheel in vendor.load_wheels()}
    assert {"pydantic", "pydantic-core", "markdown-it-py", "mdit-py-plugins", "pygments"} <= names
    assert all(len(wheel.sha256) == 64 for wheel in vendor.load_wheels())


def test_every_dependency_of_a_pinned_wheel_is_pinned_too() -> None:
    wheels = vendor.load_wheels()
    names = {wheel.name for wheel in wheels}
    assert {dep for wheel in wheels for dep in wheel.depends} <= names


def test_the_page_boots_with_pinned_wheels_and_loads_pygments_later() -> None:
    config = tomllib.loads((vendor.ROOT / "pyscript.toml").read_text(encoding="utf-8"))
    assert "mdit-py-plugins" in config["packages"]
    assert "pygments" not in config["packages"]
    assert set(vendor.page_packages()) <= {wheel.name for wheel in vendor.load_wheels()}
    assert vendor.page_packages() == [name for name in config["packages"] if name != appwheel.URL]


def test_the_npm_lock_pins_the_runtime_katex_and_axe_exactly() -> None:
    manifest = json.loads((vendor.ROOT / "package.json").read_text(encoding="utf-8"))
    assert manifest["dependencies"] == {
        "@pyscript/core": "0.7.31",
        "axe-core": "4.14.1",
        "katex": "0.19.1",
        "pyodide": "314.0.7",
    }
    locked = vendor.locked_packages()
    assert all(locked[name] == version for name, version in manifest["dependencies"].items())


def test_up_to_date_needs_the_stamp_and_every_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vendor, "STAMP", tmp_path / ".stamp")
    monkeypatch.setattr(vendor, "expected_outputs", lambda wheels: [tmp_path / "a"])
    assert not vendor.is_up_to_date([])
    (tmp_path / ".stamp").write_text(vendor.inputs_digest())
    assert not vendor.is_up_to_date([])
    (tmp_path / "a").write_text("x")
    assert vendor.is_up_to_date([])
    (tmp_path / ".stamp").write_text("stale")
    assert not vendor.is_up_to_date([])


KATEX_CSS = (
    '@font-face{font-family:KaTeX_AMS;src:url(fonts/KaTeX_AMS-Regular.woff2) format("woff2"),'
    'url(fonts/KaTeX_AMS-Regular.woff) format("woff")}'
    ".katex{font:normal 1.21em KaTeX_Main}"
    "@font-face{font-family:KaTeX_Main;src:url('fonts/KaTeX_Main-Regular.woff2') format(\"woff2\"),"
    'url(fonts/KaTeX_Main-Regular.ttf) format("truetype")}'
)


def test_the_katex_fonts_are_the_first_url_of_each_font_face() -> None:
    assert vendor.katex_fonts(KATEX_CSS) == [
        "fonts/KaTeX_AMS-Regular.woff2",
        "fonts/KaTeX_Main-Regular.woff2",
    ]


@pytest.mark.parametrize(
    "css",
    [
        pytest.param(
            '@font-face{src:url(fonts/A.woff) format("woff"),url(fonts/A.woff2)}', id="woff"
        ),
        pytest.param("@font-face{src:url(../A.woff2)}", id="outside-fonts"),
        pytest.param(".katex{}", id="no-font-face"),
    ],
)
def test_a_katex_css_not_loading_woff2_fonts_first_is_refused(css: str) -> None:
    with pytest.raises(vendor.VendorError):
        vendor.katex_fonts(css)


def test_the_installed_katex_css_loads_woff2_first() -> None:
    css = vendor.NODE_MODULES / "katex" / "dist" / vendor.KATEX_CSS
    if not css.exists():
        pytest.skip("katex is not installed: run `make setup`")
    fonts = vendor.katex_fonts(css.read_text(encoding="utf-8"))
    assert len(fonts) == css.read_text(encoding="utf-8").count("@font-face")
    assert all((css.parent / font).is_file() for font in fonts)


@pytest.fixture
def katex_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake node_modules/katex/dist with every font format; KATEX_OUT under tmp_path."""
    dist = tmp_path / "node_modules" / "katex" / "dist"
    (dist / "fonts").mkdir(parents=True)
    (dist / "katex.min.js").write_text("katex")
    (dist / "katex.min.css").write_text(KATEX_CSS)
    (dist / "katex.js").write_text("unminified")
    for name in ("KaTeX_AMS-Regular", "KaTeX_Main-Regular"):
        for ext in ("woff2", "woff", "ttf"):
            (dist / "fonts" / f"{name}.{ext}").write_text(ext)
    monkeypatch.setattr(vendor, "NODE_MODULES", tmp_path / "node_modules")
    monkeypatch.setattr(vendor, "KATEX_OUT", tmp_path / "out" / "katex")
    return dist


def test_katex_is_copied_with_only_its_woff2_fonts(katex_dist: Path) -> None:
    (vendor.KATEX_OUT / "stale").mkdir(parents=True)

    vendor.copy_katex()

    copied = sorted(p.relative_to(vendor.KATEX_OUT).as_posix() for p in vendor.KATEX_OUT.rglob("*"))
    assert copied == [
        "fonts",
        "fonts/KaTeX_AMS-Regular.woff2",
        "fonts/KaTeX_Main-Regular.woff2",
        "katex.min.css",
        "katex.min.js",
    ]
    assert (vendor.KATEX_OUT / "katex.min.css").read_text() == KATEX_CSS


def test_the_katex_files_and_fonts_are_expected_outputs(katex_dist: Path) -> None:
    outputs = vendor.expected_outputs([WHEEL])
    out = vendor.KATEX_OUT
    assert {out / "katex.min.js", out / "katex.min.css"} <= set(outputs)
    assert out / "fonts" / "KaTeX_AMS-Regular.woff2" not in outputs

    vendor.copy_katex()

    outputs = vendor.expected_outputs([WHEEL])
    assert out / "fonts" / "KaTeX_AMS-Regular.woff2" in outputs
    assert out / "fonts" / "KaTeX_Main-Regular.woff2" in outputs
    assert not any("axe" in path.as_posix() for path in outputs)


@pytest.fixture
def npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """A lock of four packages, three installed; ``npm ci`` (faked) installs them all."""
    locked = {"pyodide": "1.0", "@pyscript/core": "2.0", "katex": "3.0", "axe-core": "4.0"}
    lock = {"packages": {"": {}} | {f"node_modules/{p}": {"version": v} for p, v in locked.items()}}
    lock["packages"]["node_modules/fsevents"] = {"version": "9.0", "optional": True}
    (tmp_path / "package-lock.json").write_text(json.dumps(lock))
    modules = tmp_path / "node_modules"

    def install(package: str, version: str) -> None:
        (modules / package).mkdir(parents=True, exist_ok=True)
        (modules / package / "package.json").write_text(json.dumps({"version": version}))

    for package in ("pyodide", "@pyscript/core", "katex"):
        install(package, locked[package])
    calls: list[list[str]] = []

    def fake_run(command: list[str]) -> None:
        calls.append(command)
        for package, version in locked.items():
            install(package, version)

    monkeypatch.setattr(vendor, "NPM_LOCK", tmp_path / "package-lock.json")
    monkeypatch.setattr(vendor, "NODE_MODULES", modules)
    monkeypatch.setattr(vendor.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(vendor, "run", fake_run)
    return calls


def test_npm_ci_runs_when_any_locked_package_is_missing(npm: list[list[str]]) -> None:
    assert vendor.missing_packages() == ["axe-core@4.0"]
    vendor.npm_install()
    assert [command[:2] for command in npm] == [["/usr/bin/npm", "ci"]]
    assert vendor.missing_packages() == []


def test_npm_ci_runs_when_a_locked_package_has_another_version(npm: list[list[str]]) -> None:
    vendor.npm_install()
    manifest = vendor.NODE_MODULES / "katex" / "package.json"
    manifest.write_text(json.dumps({"version": "2.9"}))
    vendor.npm_install()
    assert len(npm) == 2


def test_npm_is_not_run_when_every_locked_package_is_installed(npm: list[list[str]]) -> None:
    vendor.npm_install()
    vendor.npm_install()
    assert len(npm) == 1


def test_npm_ci_leaving_a_package_out_is_an_error(
    npm: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vendor, "run", npm.append)
    with pytest.raises(vendor.VendorError, match=r"axe-core@4\.0"):
        vendor.npm_install()


# --- precompression: <file>.br and <file>.gz beside each compressible vendored file -----------

TEXT = b"export function f() { return 1 }\n" * 400
NOISE = hashlib.shake_256(b"incompressible").digest(20_000)


@pytest.fixture
def vendored(tmp_path: Path) -> Path:
    """A small static/vendor/: compressible files, already-compressed ones, and noise."""
    root = tmp_path / "vendor"
    files = {
        "pyodide/pyodide.asm.wasm": b"\0asm" + bytes(range(256)) * 40,
        "pyodide/pyodide.mjs": TEXT,
        "pyodide/python_stdlib.zip": b"PK" + b"import os\n" * 900,
        "pyodide/demo_pkg-1.0-py3-none-any.whl": b"PK" + TEXT,
        "pyodide/pyodide-lock.json": b'{"packages": {}}' * 100,
        "pyodide/noise-1.0-cp314-wasm32.whl": NOISE,
        "pyscript/core.css": b"body { margin: 0 }\n" * 300,
        "katex/fonts/KaTeX_Main-Regular.woff2": TEXT,
        "katex/logo.png": TEXT,
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    (root / ".stamp").write_text("digest")
    return root


def _siblings(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.suffix in {".br", ".gz"}}


def _snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    return {
        p.relative_to(root).as_posix(): (p.stat().st_mtime_ns, p.read_bytes())
        for p in root.rglob("*")
        if p.is_file()
    }


def test_each_compressible_file_gets_a_brotli_and_a_gzip_sibling(vendored: Path) -> None:
    written = compress.precompress_tree(vendored, log=lambda line: None)

    compressible = [
        "pyodide/pyodide.asm.wasm",
        "pyodide/pyodide.mjs",
        "pyodide/python_stdlib.zip",
        "pyodide/demo_pkg-1.0-py3-none-any.whl",
        "pyodide/pyodide-lock.json",
        "pyscript/core.css",
    ]
    expected = {f"{name}{suffix}" for name in compressible for suffix in (".br", ".gz")}
    assert _siblings(vendored) == expected
    assert {p.relative_to(vendored).as_posix() for p in written} == expected
    for name in compressible:
        original = (vendored / name).read_bytes()
        br = (vendored / f"{name}.br").read_bytes()
        gz = (vendored / f"{name}.gz").read_bytes()
        assert brotli.decompress(br) == original
        assert gzip.decompress(gz) == original
        assert len(br) < 0.9 * len(original) and len(gz) < 0.9 * len(original)


def test_already_compressed_types_and_files_that_do_not_shrink_get_no_sibling(
    vendored: Path,
) -> None:
    compress.precompress_tree(vendored, log=lambda line: None)
    siblings = _siblings(vendored)
    assert not any(name.startswith(("katex/", "pyodide/noise")) for name in siblings)
    assert not any(".stamp" in name or compress.MANIFEST in name for name in siblings)


def test_gzip_siblings_are_reproducible(vendored: Path) -> None:
    compress.precompress_tree(vendored, log=lambda line: None)
    first = (vendored / "pyodide/pyodide.mjs.gz").read_bytes()
    (vendored / "pyodide/pyodide.mjs.gz").unlink()
    compress.precompress_tree(vendored, log=lambda line: None)
    assert (vendored / "pyodide/pyodide.mjs.gz").read_bytes() == first


def test_a_second_run_writes_nothing(vendored: Path) -> None:
    compress.precompress_tree(vendored, log=lambda line: None)
    before = _snapshot(vendored)
    lines: list[str] = []

    assert compress.precompress_tree(vendored, log=lines.append) == []

    assert _snapshot(vendored) == before
    assert lines == []


def test_a_changed_file_is_compressed_again_even_with_an_older_mtime(vendored: Path) -> None:
    """npm gives every file of every version the same mtime: content decides, not dates."""
    compress.precompress_tree(vendored, log=lambda line: None)
    path = vendored / "pyodide/pyodide.mjs"
    mtime = path.stat().st_mtime_ns
    path.write_bytes(TEXT + b"// new version\n")
    os.utime(path, ns=(mtime, mtime))

    written = compress.precompress_tree(vendored, log=lambda line: None)

    assert sorted(p.name for p in written) == ["pyodide.mjs.br", "pyodide.mjs.gz"]
    assert (
        brotli.decompress((vendored / "pyodide/pyodide.mjs.br").read_bytes()) == path.read_bytes()
    )


def test_stale_siblings_go_when_their_file_stops_shrinking_or_is_removed(vendored: Path) -> None:
    compress.precompress_tree(vendored, log=lambda line: None)
    (vendored / "pyodide/pyodide.mjs").write_bytes(NOISE)
    (vendored / "pyscript/core.css").unlink()

    compress.precompress_tree(vendored, log=lambda line: None)

    siblings = _siblings(vendored)
    assert not any(
        name.startswith(("pyodide/pyodide.mjs", "pyscript/core.css")) for name in siblings
    )
    manifest = compress.read_manifest(vendored)
    assert manifest["pyodide/pyodide.mjs"][1] == []
    assert "pyscript/core.css" not in manifest


def test_a_deleted_sibling_is_written_again(vendored: Path) -> None:
    compress.precompress_tree(vendored, log=lambda line: None)
    (vendored / "pyodide/python_stdlib.zip.br").unlink()
    written = compress.precompress_tree(vendored, log=lambda line: None)
    assert "pyodide/python_stdlib.zip.br" in {p.relative_to(vendored).as_posix() for p in written}


def test_the_siblings_are_expected_outputs_of_the_vendor_step(
    vendored: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vendor, "VENDOR", vendored)
    monkeypatch.setattr(vendor, "STAMP", vendored / ".stamp")
    monkeypatch.setattr(vendor, "PYODIDE_OUT", vendored / "pyodide")
    monkeypatch.setattr(vendor, "PYSCRIPT_OUT", vendored / "pyscript")
    monkeypatch.setattr(vendor, "KATEX_OUT", vendored / "katex")
    assert vendored / compress.MANIFEST in vendor.expected_outputs([])

    compress.precompress_tree(vendored, log=lambda line: None)

    outputs = set(vendor.expected_outputs([]))
    assert vendored / compress.MANIFEST in outputs
    assert {vendored / name for name in _siblings(vendored)} <= outputs
    assert vendored / "pyodide/pyodide.asm.wasm.br" in outputs


def test_the_code_sandbox_gets_the_whole_precompiled_standard_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vendor, "PYODIDE_OUT", tmp_path / "pyodide")
    monkeypatch.setattr(vendor, "CODE_OUT", tmp_path / "code")
    (tmp_path / "pyodide").mkdir()
    (tmp_path / "pyodide" / vendor.STDLIB_ZIP).write_bytes(b"PK whole")
    vendor.keep_whole_stdlib()
    assert (tmp_path / "code" / vendor.STDLIB_ZIP).read_bytes() == b"PK whole"
    assert tmp_path / "code" / vendor.STDLIB_ZIP in vendor.expected_outputs([])


# --- trimming the archives to the modules the page imports -------------------------------------


@pytest.mark.parametrize(
    ("entry", "module"),
    [
        ("json/__init__.pyc", "json"),
        ("json/decoder.pyc", "json.decoder"),
        ("asyncio/events.py", "asyncio.events"),
        ("typing.pyc", "typing"),
        ("json/", None),
        ("pydantic/py.typed", None),
        ("pydantic/_internal/__init__.pyi", None),
        ("pydantic-2.14.4.dist-info/RECORD", None),
        ("_sysconfigdata__emscripten_wasm32-emscripten.pyc", None),
        ("site-packages/README.txt", None),
    ],
)
def test_an_archive_entry_names_its_module(entry: str, module: str | None) -> None:
    assert trim.module_of(entry) == module


def test_the_set_is_the_trace_plus_the_safety_list_with_their_parent_packages() -> None:
    keep = trim.keep_set(["a.b.c", "solo"], ["x.*", "y.z"])
    for kept in ("a", "a.b", "a.b.c", "solo", "x", "x.any", "x.any.deeper", "y", "y.z"):
        assert kept in keep, kept
    for dropped in ("a.b.d", "a.c", "xx", "y.other", "solo.sub", "z"):
        assert dropped not in keep, dropped


def test_the_default_safety_list_is_part_of_the_set() -> None:
    keep = trim.keep_set([])
    assert all(pattern.removesuffix(".*") in keep for pattern in trim.safety_patterns())
    for lazily_imported in ("_strptime", "encodings.utf_8", "encodings.idna", "traceback"):
        assert lazily_imported in keep
    assert "pydantic._internal._serializers" in keep  # NOTE: the whole package
    assert "pyodide.http._pyfetch" in keep
    assert "email.parser" not in keep and "pydantic.v1" not in keep


ARCHIVE = [
    "pkg/",
    "pkg/__init__.pyc",
    "pkg/kept.pyc",
    "pkg/dropped.pyc",
    "pkg/py.typed",
    "pkg/sub/",
    "pkg/sub/__init__.pyc",
    "pkg/sub/deep.pyc",
    "pkg/sub/data.json",
    "gone/",
    "gone/__init__.pyc",
    "gone/mod.pyc",
    "gone/template.txt",
    "top.pyc",
    "other_top.pyc",
    "README.txt",
    "pkg-1.0.dist-info/",
    "pkg-1.0.dist-info/METADATA",
    "site-packages/",
    "site-packages/README.txt",
]


def test_only_the_modules_of_the_set_and_what_they_need_stay() -> None:
    kept = trim.selected(ARCHIVE, trim.keep_set(["pkg.kept", "pkg.sub.deep", "top"], []))
    assert kept == [
        "pkg/",
        "pkg/__init__.pyc",  # NOTE: the package of a kept module
        "pkg/kept.pyc",
        "pkg/py.typed",  # NOTE: data beside a kept module
        "pkg/sub/",
        "pkg/sub/__init__.pyc",
        "pkg/sub/deep.pyc",
        "pkg/sub/data.json",
        "top.pyc",
        "README.txt",  # NOTE: the root's files, and folders that are no package
        "pkg-1.0.dist-info/",
        "pkg-1.0.dist-info/METADATA",
        "site-packages/",
        "site-packages/README.txt",
    ]


def test_a_kept_module_keeps_its_package_even_when_the_trace_names_only_the_module() -> None:
    kept = trim.selected(
        ["a/__init__.pyc", "a/b/__init__.pyc", "a/b/c.pyc", "a/d.pyc"], trim.keep_set(["a.b.c"], [])
    )
    assert kept == ["a/__init__.pyc", "a/b/__init__.pyc", "a/b/c.pyc"]


def _archive(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            stored = name.endswith(".pyc")
            archive.writestr(name, data, zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
    return path


def test_a_module_not_in_the_set_is_not_in_the_trimmed_archive(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": b"",
        "pkg/kept.py": b"VALUE = 1\n",
        "pkg/dropped.py": b"VALUE = 2\n",
        "gone/__init__.py": b"",
        "data.txt": b"x" * 1000,
    }
    path = _archive(tmp_path / "lib.zip", files)

    result = trim.trim_archive(path, trim.keep_set(["pkg.kept"], []))

    assert result.dropped == ["gone/__init__.py", "pkg/dropped.py"]
    assert result.after < result.before
    with zipfile.ZipFile(path) as archive:
        assert archive.namelist() == ["pkg/__init__.py", "pkg/kept.py", "data.txt"]
        assert archive.read("pkg/kept.py") == b"VALUE = 1\n"
        assert archive.getinfo("data.txt").compress_type == zipfile.ZIP_DEFLATED
    importer = zipimport.zipimporter(str(path))
    assert importer.find_spec("pkg") is not None and importer.find_spec("gone") is None
    package = zipimport.zipimporter(str(path / "pkg"))
    assert package.find_spec("pkg.kept") is not None
    assert package.find_spec("pkg.dropped") is None


def test_the_app_imports_are_read_from_every_import_statement(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("import json, os.path\nfrom . import sibling\n")
    (tmp_path / "sub" / "b.py").write_text("def f():\n    from datetime import date\n")
    assert trim.app_imports(tmp_path) == ["datetime", "json", "os.path"]


def test_a_new_app_import_or_page_package_traces_and_trims_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = vendor.inputs_digest()
    monkeypatch.setattr(vendor, "app_imports", lambda app: [*trim.app_imports(app), "zipfile"])
    after_import = vendor.inputs_digest()
    monkeypatch.setattr(vendor, "page_packages", lambda: ["pydantic"])
    assert len({before, after_import, vendor.inputs_digest()}) == 3


def test_pygments_and_pydantic_core_are_shipped_whole_the_pure_boot_wheels_trimmed() -> None:
    wheels = vendor.load_wheels()
    whole = {wheel.name for wheel in wheels if not wheel.trim}
    assert whole == {"pygments", "pydantic-core"}
    archives = vendor.trimmed_archives(wheels)
    assert archives[0].name == vendor.STDLIB_ZIP
    assert {path.name for path in archives[1:]} == {w.file for w in wheels if w.trim}


def test_the_lock_and_the_siblings_are_written_after_the_trim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[str] = []
    monkeypatch.setattr(vendor, "STAMP", tmp_path / ".stamp")
    monkeypatch.setattr(vendor, "is_up_to_date", lambda wheels: False)
    monkeypatch.setattr(vendor, "load_wheels", lambda: [WHEEL])
    steps_faked = ("npm_install", "copy_runtime", "precompile", "keep_whole_stdlib", "write_lock")
    for name in steps_faked:
        monkeypatch.setattr(vendor, name, lambda *args, step=name: steps.append(step))
    monkeypatch.setattr(vendor, "download_wheel", lambda wheel: tmp_path / wheel.file)
    monkeypatch.setattr(vendor, "trace", lambda: steps.append("trace") or ["json"])
    monkeypatch.setattr(
        vendor, "trim_shipped", lambda wheels, traced: steps.append(f"trim {traced}")
    )
    monkeypatch.setattr(vendor, "precompress_tree", lambda root, log: steps.append("compress"))
    monkeypatch.setattr(vendor, "freshen_siblings", lambda: steps.append("freshen"))

    vendor.vendor()

    assert steps == [
        "npm_install",
        "copy_runtime",
        "precompile",
        "keep_whole_stdlib",  # NOTE: before the trim: the sandbox's copy is whole
        "write_lock",  # NOTE: the trace loads the packages through it
        "trace",
        "trim ['json']",
        "write_lock",
        "compress",
        "freshen",
    ]
    assert (tmp_path / ".stamp").read_text() == vendor.inputs_digest()


def test_siblings_kept_for_a_file_written_again_with_the_same_bytes_are_not_older_than_it(
    vendored: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server sends a sibling only if it is not older than its file (server/http/static.py)."""
    monkeypatch.setattr(vendor, "VENDOR", vendored)
    compress.precompress_tree(vendored, log=lambda line: None)
    path = vendored / "pyodide/python_stdlib.zip"
    sibling = vendored / "pyodide/python_stdlib.zip.br"
    os.utime(sibling, ns=(1_000_000_000, 1_000_000_000))
    path.write_bytes(path.read_bytes())  # NOTE: as precompile and trim do on every run
    assert compress.precompress_tree(vendored, log=lambda line: None) == []

    vendor.freshen_siblings()

    assert sibling.stat().st_mtime_ns >= path.stat().st_mtime_ns
    untouched = vendored / "pyodide/pyodide.mjs.br"
    assert untouched.stat().st_mtime_ns >= (vendored / "pyodide/pyodide.mjs").stat().st_mtime_ns


# --- the bundle in static/vendor/ (after `make setup`) -----------------------------------------


def _shipped() -> Path:
    if not vendor.STAMP.exists() or not (vendor.NODE_MODULES / "pyodide").exists():
        pytest.skip("the runtime is not vendored: run `make setup`")
    return vendor.PYODIDE_OUT


def _modules(path: Path) -> set[str]:
    with zipfile.ZipFile(path) as archive:
        return {m for name in archive.namelist() if (m := trim.module_of(name)) is not None}


def test_the_shipped_stdlib_has_every_module_the_app_and_pyscript_import() -> None:
    shipped = _modules(_shipped() / vendor.STDLIB_ZIP)
    stdlib = _modules(vendor.NODE_MODULES / "pyodide" / vendor.STDLIB_ZIP)
    pyscript = vendor.NODE_MODULES / "@pyscript" / "core" / "src" / "stdlib"
    named = set(trim.app_imports(vendor.ROOT / "app")) | set(trim.app_imports(pyscript))
    wanted = {name for name in named if name in stdlib}
    assert {"asyncio", "json", "re", "uuid", "datetime", "dataclasses"} <= wanted
    assert wanted - shipped == set()
    assert len(shipped) < len(stdlib)  # NOTE: trimmed indeed


def test_every_module_shipped_has_its_packages() -> None:
    out = _shipped()
    for path in vendor.trimmed_archives(vendor.load_wheels()):
        modules = _modules(out / path.name)
        packages = {parent for module in modules for parent in trim.parents(module)}
        assert packages <= modules, path.name


def test_the_lock_lists_the_trimmed_files_actually_shipped() -> None:
    out = _shipped()
    lock = json.loads((out / "pyodide-lock.json").read_text(encoding="utf-8"))
    for entry in lock["packages"].values():
        assert entry["sha256"] == vendor.file_sha256(out / entry["file_name"])
    manifest = compress.read_manifest(vendor.VENDOR)
    stdlib = f"pyodide/{vendor.STDLIB_ZIP}"
    assert manifest[stdlib][0] == vendor.file_sha256(out / vendor.STDLIB_ZIP)


def test_every_shipped_archive_stores_its_members_for_the_wire_to_compress() -> None:
    """Brotli over stored bytes beats brotli over deflate's output (pydantic-core's library:
    0.97 MB against 1.45 MB), and unpacking a stored member is a copy."""
    shipped = [vendor.PYODIDE_OUT / vendor.STDLIB_ZIP]
    shipped += [vendor.PYODIDE_OUT / wheel.file for wheel in vendor.load_wheels()]
    shipped.append(appwheel.ROOT / appwheel.URL)
    for path in shipped:
        with zipfile.ZipFile(path) as archive:
            packed = [
                i.filename for i in archive.infolist() if i.compress_type != zipfile.ZIP_STORED
            ]
        assert packed == [], f"{path.name} compresses {packed}"
