"""Precompile Python sources to .pyc inside zips and wheels, for a faster boot.

Runs INSIDE Pyodide (under Node, see tools/precompile.mjs) so the bytecode matches the
browser's CPython exactly. Each ``name.py`` becomes ``name.pyc`` (sourceless, loaded directly
by zipimport and the path finder); files that do not compile are kept as source.

NOTE: the cost is tracebacks without source lines for those frames. App code is not touched.

Every member is written stored (uncompressed): the wire's brotli or gzip then compresses the
raw bytes, which it does far better than deflate's output (pydantic-core's wasm library: a
1.45 MB brotli body deflated inside its wheel, 0.97 MB stored), and unpacking is a copy.
"""

from __future__ import annotations

import importlib._bootstrap_external as bootstrap
import sys
import zipfile

# NOTE: a fixed timestamp keeps the output reproducible; sourceless .pyc files skip the check.
MTIME = 0


def compiled(name: str, source: bytes) -> bytes | None:
    try:
        code = compile(source, name, "exec", dont_inherit=True)
    except SyntaxError:
        return None
    return bytes(bootstrap._code_to_timestamp_pyc(code, MTIME, len(source)))


def precompile(src: str, dst: str) -> int:
    count = 0
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            pyc = compiled(info.filename, data) if info.filename.endswith(".py") else None
            if pyc is None:
                info.compress_type = zipfile.ZIP_STORED
                zout.writestr(info, data)
                continue
            zout.writestr(zipfile.ZipInfo(info.filename + "c", info.date_time), pyc)
            count += 1
    return count


def main(pairs: list[str]) -> None:
    for src, dst in zip(pairs[::2], pairs[1::2], strict=True):
        print(f"precompile: {precompile(src, dst)} modules in {dst.rsplit('/', 1)[-1]}")


main(sys.argv[1:])
