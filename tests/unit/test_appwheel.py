"""The app's wheel (tools/appwheel.py): what it holds and when it is rebuilt."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import appwheel


@pytest.fixture
def app(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    for name, text in {
        "__init__.py": "",
        "main.py": "boot()\n",
        "state/__init__.py": "",
        "state/text.py": "TEXT = 1\n",
        "state/__pycache__/text.cpython-314.pyc": "",
        "notes.md": "not a module\n",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_wheel_holds_every_module_but_the_page_script(app: Path, tmp_path: Path) -> None:
    wheel = tmp_path / appwheel.WHEEL

    count = appwheel.write_source_wheel(wheel, app)

    names = zipfile.ZipFile(wheel).namelist()
    modules = [name for name in names if not name.startswith(appwheel.DIST_INFO)]
    assert modules == ["app/__init__.py", "app/state/__init__.py", "app/state/text.py"]
    assert count == 3
    assert zipfile.ZipFile(wheel).read("app/state/text.py") == b"TEXT = 1\n"
    assert {f"{appwheel.DIST_INFO}/{n}" for n in ("METADATA", "WHEEL", "RECORD")} <= set(names)


def test_the_same_sources_make_the_same_bytes(app: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "1.whl", tmp_path / "2.whl"
    appwheel.write_source_wheel(first, app)
    appwheel.write_source_wheel(second, app)

    assert first.read_bytes() == second.read_bytes()


@pytest.mark.parametrize(
    ("change", "rebuilds"),
    [
        pytest.param(lambda app: (app / "state/text.py").write_text("TEXT = 2\n"), True, id="edit"),
        pytest.param(lambda app: (app / "state/more.py").write_text(""), True, id="new-module"),
        pytest.param(lambda app: (app / "state/text.py").rename(app / "t.py"), True, id="move"),
        pytest.param(lambda app: (app / "main.py").write_text("x\n"), False, id="the-script"),
        pytest.param(lambda app: (app / "notes.md").write_text("x\n"), False, id="not-python"),
    ],
)
def test_the_digest_follows_the_modules_only(app: Path, change: object, rebuilds: bool) -> None:
    before = appwheel.sources_digest(app)
    change(app)  # type: ignore[operator]

    assert (appwheel.sources_digest(app) != before) is rebuilds


def test_pyscript_config_loads_the_built_wheel_by_its_path() -> None:
    folder = appwheel.OUT.relative_to(appwheel.ROOT).as_posix()
    assert f"./{folder}/{appwheel.WHEEL}" == appwheel.URL
