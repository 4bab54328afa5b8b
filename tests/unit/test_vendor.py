"""The vendoring step: pinned inputs, checked hashes, a trimmed lock, idempotent re-runs."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
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
    assert {"pydantic", "pydantic-core", "markdown-it-py"} <= names
    assert all(len(wheel.sha256) == 64 for wheel in vendor.load_wheels())


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
