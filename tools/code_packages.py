"""Vendor the pure-Python wheels code run in the page may import (tools/code-packages.toml).

Each wheel is downloaded with pip (through tools/vendor.py's pinned, hash-checked download)
into static/vendor/code/wheels/, and static/vendor/code/packages.json maps every module a wheel
provides to its file; static/code/worker.js installs a wheel at the first import of one of them.
"""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from pathlib import Path

from vendor import VendorError, Wheel, download_wheel

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "tools" / "code-packages.toml"
OUT = ROOT / "static" / "vendor" / "code"
WHEELS = OUT / "wheels"
INDEX = OUT / "packages.json"
PURE_TAG = "-none-any.whl"


def load_spec(text: str) -> list[Wheel]:
    """The wheels a spec names; raises VendorError for one that is not pure."""
    wheels = [
        Wheel(name=name, depends=[], **fields)
        for name, fields in tomllib.loads(text).get("packages", {}).items()
    ]
    for wheel in wheels:
        if not wheel.file.endswith(PURE_TAG):
            raise VendorError(f"{wheel.file}: only pure wheels (*{PURE_TAG}) run in the sandbox")
    return wheels


def index(wheels: list[Wheel]) -> dict[str, str]:
    """Module name → wheel file, for every module of every wheel."""
    return {module: wheel.file for wheel in wheels for module in wheel.imports}


def vendor_code_packages() -> None:
    wheels = load_spec(SPEC.read_text(encoding="utf-8"))
    WHEELS.mkdir(parents=True, exist_ok=True)
    wanted = {wheel.file for wheel in wheels}
    for stale in WHEELS.iterdir():
        if stale.name not in wanted:
            stale.unlink()
    for wheel in wheels:
        target = WHEELS / wheel.file
        if not target.exists():
            shutil.copyfile(download_wheel(wheel), target)
    INDEX.write_text(json.dumps({"wheels": index(wheels)}, indent=1) + "\n", encoding="utf-8")
    print(f"code packages: {len(wheels)} wheel(s) in {WHEELS.relative_to(ROOT)}", flush=True)


def main() -> int:
    try:
        vendor_code_packages()
    except VendorError as error:
        print(f"code packages: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
