"""Precompress static files: ``<file>.br`` (brotli, quality 11) and ``<file>.gz`` (gzip -9).

A server or static host that finds such a sibling sends it, with ``Content-Encoding``, to a
browser that accepts that coding (the reference server: server/http/static.py; nginx:
``gzip_static``/``brotli_static``; Caddy: ``precompressed``). A sibling is written only when it
pays: smaller than ``MIN_GAIN`` of the original. Already-compressed formats (woff2, images) are
never tried.

``precompress_tree`` keeps a manifest (``.precompressed.json``) of what it compressed: each
file's sha256 and the siblings written. A second run hashes the files and compresses only what
changed (not mtimes: npm ships every file with the same old mtime, so a new version of a file
could look older than its stale sibling).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import brotli

# NOTE: the zips (python_stdlib.zip, the wheels) hold precompiled .pyc, mostly stored or
# lightly deflated: brotli takes them to about 27-44% of their size. The wasm pydantic-core
# wheel (a deflated .so) barely shrinks (89-90%); MIN_GAIN decides per file.
COMPRESSIBLE = frozenset(
    {
        ".wasm",
        ".mjs",
        ".js",
        ".css",
        ".json",
        ".map",
        ".zip",
        ".whl",
        ".html",
        ".py",
        ".toml",
        ".svg",
        ".txt",
    }
)
MIN_GAIN = 0.9
MANIFEST = ".precompressed.json"


def brotli_11(data: bytes) -> bytes:
    compressed: bytes = brotli.compress(data, quality=11)
    return compressed


def gzip_9(data: bytes) -> bytes:
    # NOTE: mtime=0 keeps the output a function of the input alone (reproducible builds).
    return gzip.compress(data, compresslevel=9, mtime=0)


# Suffix of the sibling and its compressor, in the order servers prefer them.
CODINGS: tuple[tuple[str, Callable[[bytes], bytes]], ...] = ((".br", brotli_11), (".gz", gzip_9))
SIBLING_SUFFIXES = tuple(suffix for suffix, _ in CODINGS)


def is_compressible(path: Path) -> bool:
    return path.suffix.lower() in COMPRESSIBLE and not path.name.startswith(".")


def sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def precompress(path: Path) -> list[Path]:
    """Write the siblings of ``path`` that pay, remove those that do not; the siblings kept."""
    data = path.read_bytes()
    kept: list[Path] = []
    for suffix, compress in CODINGS:
        target = sibling(path, suffix)
        compressed = compress(data)
        if len(compressed) < MIN_GAIN * len(data):
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_bytes(compressed)
            os.replace(tmp, target)
            kept.append(target)
        else:
            target.unlink(missing_ok=True)
    return kept


def precompress_files(paths: Iterable[Path]) -> list[Path]:
    """Precompress each file (largest first, on every core); every sibling written."""
    ordered = sorted(paths, key=lambda p: p.stat().st_size, reverse=True)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        # NOTE: brotli and zlib release the GIL while compressing: threads use every core.
        return [target for kept in pool.map(precompress, ordered) for target in kept]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


Manifest = dict[str, tuple[str, list[str]]]


def read_manifest(root: Path) -> Manifest:
    """``{original: (sha256, [siblings])}``, paths relative to ``root``; empty if absent."""
    try:
        raw = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        return {
            str(name): (str(entry["sha256"]), [str(s) for s in entry["siblings"]])
            for name, entry in raw.items()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def write_manifest(root: Path, manifest: Manifest) -> None:
    raw = {name: {"sha256": d, "siblings": s} for name, (d, s) in sorted(manifest.items())}
    (root / MANIFEST).write_text(json.dumps(raw, indent=1) + "\n", encoding="utf-8")


def manifest_siblings(root: Path) -> list[Path]:
    """The siblings the manifest under ``root`` says were written."""
    return [root / name for _, siblings in read_manifest(root).values() for name in siblings]


def precompress_tree(root: Path, log: Callable[[str], None] = print) -> list[Path]:
    """Precompress every compressible file under ``root``; the siblings written (none if current).

    A file whose sha256 and siblings match the manifest is left alone; siblings whose original
    is gone are removed.
    """
    old = read_manifest(root)
    manifest: Manifest = {}
    stale: list[Path] = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink() or not is_compressible(path):
            continue
        name = path.relative_to(root).as_posix()
        digest = _sha256(path)
        current = old.get(name)
        if current and current[0] == digest and all((root / s).is_file() for s in current[1]):
            manifest[name] = current
        else:
            manifest[name] = (digest, [])
            stale.append(path)
    if stale:
        log(f"compress: {len(stale)} file(s) under {root.name}/ (brotli 11, gzip -9)")
    written = precompress_files(stale)
    for target in written:
        original = target.with_suffix("").relative_to(root).as_posix()
        manifest[original][1].append(target.relative_to(root).as_posix())
    for path in list(root.rglob("*")):
        original = path.with_suffix("")
        if (
            path.suffix in SIBLING_SUFFIXES
            and is_compressible(original)
            and original.relative_to(root).as_posix() not in manifest
        ):
            path.unlink()
    if manifest != old:
        write_manifest(root, manifest)
    return written
