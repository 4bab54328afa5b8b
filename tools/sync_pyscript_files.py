"""Rewrite the ``[files]`` table of pyscript.toml so the page ships every module of ``app/``.

Run after adding or removing a module: ``python tools/sync_pyscript_files.py``. A unit test
(tests/unit/test_layering.py) fails when the table and the package disagree.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "pyscript.toml"
ENTRY = "main.py"  # NOTE: run by the <script type="py"> tag, not imported


def files_table() -> str:
    app = ROOT / "app"
    modules = sorted(p.relative_to(app).as_posix() for p in app.rglob("*.py"))
    shipped = [name for name in modules if name != ENTRY]
    return "[files]\n" + "".join(f'"./app/{name}" = "./app/{name}"\n' for name in shipped)


def main() -> None:
    head = CONFIG.read_text(encoding="utf-8").split("[files]")[0]
    CONFIG.write_text(head + files_table(), encoding="utf-8")
    print(f"pyscript.toml: {files_table().count(chr(10)) - 1} modules listed")


if __name__ == "__main__":
    main()
