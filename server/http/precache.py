"""The service worker's list of the page's files for one build, and the worker written with it.

``sw.js`` at the root holds a placeholder between ``/* PRECACHE */`` and ``/* END PRECACHE */``;
:func:`render_worker` puts there every file a page boots from (and what it loads later: KaTeX)
with the first 16 hex digits of its SHA-256, and the build: a hash of that whole list. Any
change of any file is a new build, which the worker installs beside the old one and the page
offers to load. The server renders it per request (hashes kept while a file's size and mtime
hold); ``make dist`` writes it once into the bundle.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

WORKER = "sw.js"
REVISION_DIGITS = 16
TOP_FILES = ("index.html", "pyscript.toml", "config.json", "app/main.py")
# NOTE: PyScript's editor and terminal (never loaded by Riacho) and PyScript's own worker.
LEFT_OUT = re.compile(r"^static/vendor/pyscript/(codemirror|xterm|service-worker\.js)")
NOT_SERVED_SUFFIXES = (".br", ".gz")
NOT_SERVED_NAMES = frozenset({"MANIFEST"})
PLACEHOLDER = re.compile(r"/\* PRECACHE \*/.*?/\* END PRECACHE \*/", re.DOTALL)


@dataclass(frozen=True, slots=True)
class PrecacheEntry:
    url: str  # NOTE: relative to the worker's scope (the page's folder)
    revision: str


def revision(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:REVISION_DIGITS]


def precached_paths(root: Path) -> list[str]:
    """The files kept for a page served from ``root``, as paths relative to it, sorted."""
    found = [
        (Path(folder) / name).relative_to(root).as_posix()
        # NOTE: through symlinked folders too (a root of links to the repository's files)
        for folder, _, names in os.walk(root / "static", followlinks=True)
        if "__pycache__" not in Path(folder).parts
        for name in names
        if not name.startswith(".")
        and name not in NOT_SERVED_NAMES
        and not name.endswith(NOT_SERVED_SUFFIXES)
    ]
    return sorted(p for p in found if not LEFT_OUT.match(p))


def build_of(entries: Iterable[PrecacheEntry]) -> str:
    listing = "\n".join(f"{entry.url} {entry.revision}" for entry in entries)
    return revision(listing.encode())


def render_worker(template: str, entries: list[PrecacheEntry]) -> str:
    """``sw.js`` with ``entries`` and their build written in."""
    manifest = {
        "build": build_of(entries),
        "files": [{"url": entry.url, "revision": entry.revision} for entry in entries],
    }
    text = json.dumps(manifest, separators=(",", ":"))
    # NOTE: the markers stay, so a bundle's worker can be written again (a server on dist/)
    written = f"/* PRECACHE */ {text} /* END PRECACHE */"
    rendered, count = PLACEHOLDER.subn(lambda _match: written, template, count=1)
    if count != 1:
        raise ValueError(f"{WORKER} has no /* PRECACHE */ ... /* END PRECACHE */ placeholder")
    return rendered


class Precache:
    """Revisions of the files under ``root``, each computed again only when the file changes.

    ``generated`` holds files the server makes itself (``config.json`` with no file for it).
    """

    def __init__(self, root: Path, generated: Mapping[str, bytes]) -> None:
        self.root = root
        self.generated = dict(generated)
        self._known: dict[str, tuple[int, int, str]] = {}

    def entries(self) -> list[PrecacheEntry]:
        paths = [*TOP_FILES, *precached_paths(self.root)]
        return [PrecacheEntry(path, self._revision(path)) for path in paths]

    def worker(self) -> str:
        template = (self.root / WORKER).read_text(encoding="utf-8")
        return render_worker(template, self.entries())

    def _revision(self, relative: str) -> str:
        path = self.root / relative
        if not path.is_file() and relative in self.generated:
            return revision(self.generated[relative])
        st = path.stat()
        known = self._known.get(relative)
        if known is not None and known[:2] == (st.st_mtime_ns, st.st_size):
            return known[2]
        value = revision(path.read_bytes())
        self._known[relative] = (st.st_mtime_ns, st.st_size, value)
        return value
