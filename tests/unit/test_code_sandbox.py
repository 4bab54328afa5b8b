"""The code sandbox's frame (static/code/host.mjs) and the page's CSP agree (SPEC §13)."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from server.http.security import CODE_SANDBOX_BOOTSTRAP, CONTENT_SECURITY_POLICY

HOST = Path(__file__).resolve().parents[2] / "static" / "code" / "host.mjs"


def bootstrap_text() -> str:
    """The BOOTSTRAP constant of host.mjs: its single-quoted pieces, joined."""
    source = HOST.read_text(encoding="utf-8")
    declaration = re.search(r"export const BOOTSTRAP =(.*?);\n", source, re.DOTALL)
    assert declaration is not None
    return "".join(re.findall(r"'([^']*)'", declaration.group(1)))


def test_the_pages_csp_allows_exactly_the_sandbox_bootstrap() -> None:
    digest = hashlib.sha256(bootstrap_text().encode()).digest()
    assert "sha256-" + base64.b64encode(digest).decode() == CODE_SANDBOX_BOOTSTRAP
    script_src = next(d for d in CONTENT_SECURITY_POLICY.split("; ") if d.startswith("script-src"))
    assert f"'{CODE_SANDBOX_BOOTSTRAP}'" in script_src.split()
    assert "'unsafe-inline'" not in script_src.split()


def test_the_sandbox_srcdoc_refuses_every_connection() -> None:
    source = HOST.read_text(encoding="utf-8")
    assert "\"connect-src 'none'\"" in source
    assert 'setAttribute("sandbox", "allow-scripts")' in source
    assert "allow-same-origin" not in source
