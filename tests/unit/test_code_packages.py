"""The pure wheels code run in the page may import (tools/code_packages.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import code_packages
from vendor import VendorError

TWO = """
[packages.alpha]
version = "1.0"
file = "alpha-1.0-py3-none-any.whl"
sha256 = "00"
imports = ["alpha", "alpha_extra"]

[packages.beta]
version = "2.0"
file = "beta-2.0-py2.py3-none-any.whl"
sha256 = "11"
imports = ["beta"]
"""


def test_every_module_of_every_wheel_is_indexed() -> None:
    wheels = code_packages.load_spec(TWO)
    assert code_packages.index(wheels) == {
        "alpha": "alpha-1.0-py3-none-any.whl",
        "alpha_extra": "alpha-1.0-py3-none-any.whl",
        "beta": "beta-2.0-py2.py3-none-any.whl",
    }


def test_a_wheel_with_compiled_code_is_refused() -> None:
    spec = TWO.replace("beta-2.0-py2.py3-none-any.whl", "beta-2.0-cp314-cp314-linux_x86_64.whl")
    with pytest.raises(VendorError, match="only pure wheels"):
        code_packages.load_spec(spec)


def test_the_projects_list_is_pure_pinned_and_names_its_modules() -> None:
    wheels = code_packages.load_spec(code_packages.SPEC.read_text(encoding="utf-8"))
    assert wheels, "tools/code-packages.toml lists at least one wheel"
    for wheel in wheels:
        assert len(wheel.sha256) == 64 and wheel.imports and wheel.version in wheel.file
