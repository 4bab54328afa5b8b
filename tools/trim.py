"""Trim the standard library archive and the pure-Python wheels to the modules the page loads.

A first visit moves every byte of ``python_stdlib.zip`` and of the boot wheels, though the page
imports a fraction of them. This step keeps, in each archive, only:

- the modules of the *trace*: tools/trace.py runs inside Pyodide under Node (tools/trace.mjs)
  on the vendored runtime, and records every module imported (``sys.modules`` and the ``import``
  audit events): what Pyodide imports at start-up and while loading the page's packages, every
  app module but the entry point, the app exercised the way the page does (markdown, code
  highlighting, every stream event, every API payload, a ChatStream over a fake server, the
  error paths), Pygments loaded and every one of its lexers used, PyScript's own imports;
- the modules of :data:`SAFETY` (imported lazily at run time in ways a trace can miss);
- every parent package of a kept module (its ``__init__``);
- the data files beside kept modules (``py.typed``, ``*.pyi``, templates), every file in a
  folder that is not a package (``*.dist-info/``, the zip's ``site-packages/README.txt``) and
  the root's files; the folder entries that still hold something.

A module not kept is gone from the archive: importing it raises ModuleNotFoundError. An
end-to-end failure of that kind means the trace missed a path: exercise it in tools/trace.py or
name the module in :data:`SAFETY`, with the reason.

NOTE: a trimmed wheel's ``RECORD`` still lists the files left out (and the ``.py`` names that
precompilation turned into ``.pyc``); Pyodide unpacks wheels without reading it.

NOTE: wheels marked ``trim = false`` in tools/browser-wheels.toml are shipped whole: Pygments
(loaded later, on demand, and finding lexers by name through its own mapping: a lexer module
left out would turn a named language into an ImportError instead of plain text) and the wasm
pydantic-core (an extension module, nothing to gain).
"""

from __future__ import annotations

import ast
import os
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Modules kept whatever the trace says, by reason. ``name`` is that module; ``name.*`` is the
# package and everything under it. Most are in the trace today too: listed here, they stay if
# a change to the trace stops reaching them.
SAFETY: dict[str, tuple[str, ...]] = {
    # Pyodide's own Python side (FFI, event loop, package loader, pyfetch, console): the
    # runtime's API, used by the runtime itself and by PyScript; small, kept whole (the trace
    # imports every module of it, so their own imports are kept too).
    "pyodide runtime": ("_pyodide.*", "pyodide.*"),
    # Imported by the interpreter itself, on first use: datetime.strptime / time.strptime,
    # int <-> str of huge numbers, and the codecs a lookup by name may ask for (an incremental
    # decoder, a text file's encoding, IDNA host names, a BOM).
    "interpreter": (
        "_strptime",
        "calendar",
        "_pylong",
        "encodings",
        "encodings.aliases",
        "encodings.ascii",
        "encodings.charmap",
        "encodings.cp1252",
        "encodings.cp437",
        "encodings.idna",
        "encodings.latin_1",
        "encodings.punycode",
        "encodings.raw_unicode_escape",
        "encodings.unicode_escape",
        "encodings.utf_16",
        "encodings.utf_16_be",
        "encodings.utf_16_le",
        "encodings.utf_32",
        "encodings.utf_32_be",
        "encodings.utf_32_le",
        "encodings.utf_8",
        "encodings.utf_8_sig",
        "stringprep",
    ),
    # Error paths (an exception printed with its source lines, a warning shown, a "did you
    # mean" suggestion) must not fail on a missing module themselves.
    "error reports": (
        "traceback",
        "linecache",
        "tokenize",
        "token",
        "_colorize",
        "warnings",
        "_py_warnings",
        "textwrap",
        "reprlib",
    ),
    # PyScript's boot code (it writes its own package with os and pathlib) and its package's
    # imports (pyscript/*.py), which the trace cannot run outside a page.
    "PyScript": (
        "asyncio",
        "base64",
        "collections",
        "functools",
        "html",
        "inspect",
        "io",
        "json",
        "os",
        "pathlib",
    ),
    # Pydantic's internals import each other on first use (schema building for a new type,
    # serializers, error reports): the whole _internal package; the plugin loader runs for
    # every validator made.
    "pydantic": ("pydantic._internal.*", "pydantic.plugin.*"),
    # Package metadata (entry points: pydantic's plugin loader) reads a wheel on sys.path as a
    # zip (the page mounts Pygments so) through modules a scan of plain folders never imports.
    "package metadata": ("importlib.metadata.*", "zipfile.*"),
}

MODULE_SUFFIXES = (".pyc", ".py")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def safety_patterns() -> list[str]:
    """Every pattern of :data:`SAFETY`, sorted."""
    return sorted({pattern for patterns in SAFETY.values() for pattern in patterns})


@dataclass(frozen=True, slots=True)
class Keep:
    """The modules kept: names, and packages kept with everything under them."""

    names: frozenset[str]
    packages: frozenset[str]

    def __contains__(self, module: object) -> bool:
        if not isinstance(module, str):
            return False
        if module in self.names:
            return True
        parts = module.split(".")
        return any(".".join(parts[:end]) in self.packages for end in range(1, len(parts) + 1))


def parents(module: str) -> list[str]:
    """The packages above ``module``: ``a.b.c`` -> ``["a", "a.b"]``."""
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def keep_set(traced: Iterable[str], patterns: Iterable[str] | None = None) -> Keep:
    """The trace plus the safety patterns, with every parent package of what they name."""
    names: set[str] = set()
    packages: set[str] = set()
    for pattern in safety_patterns() if patterns is None else patterns:
        if pattern.endswith(".*"):
            packages.add(pattern.removesuffix(".*"))
        else:
            names.add(pattern)
    names.update(traced)
    for name in list(names | packages):
        names.update(parents(name))
    return Keep(frozenset(names), frozenset(packages))


def module_of(entry: str) -> str | None:
    """The module an archive entry holds (``a/b/__init__.pyc`` -> ``a.b``), or None."""
    if entry.endswith("/"):
        return None
    folder, _, file = entry.rpartition("/")
    stem = next((file.removesuffix(s) for s in MODULE_SUFFIXES if file.endswith(s)), None)
    if stem is None or not IDENTIFIER.match(stem):
        return None
    dotted = folder.replace("/", ".") if folder else ""
    if folder and not all(IDENTIFIER.match(part) for part in folder.split("/")):
        return None
    if stem == "__init__":
        return dotted or None
    return f"{dotted}.{stem}" if dotted else stem


def _folder_kept(folder: str, keep: Keep) -> bool:
    """Whether a data file in ``folder`` stays: the root, a folder that is no package (a
    dist-info), or a kept package."""
    if not folder:
        return True
    parts = folder.split("/")
    if not all(IDENTIFIER.match(part) for part in parts):
        return True
    return ".".join(parts) in keep


def selected(entries: Iterable[str], keep: Keep) -> list[str]:
    """The entries of an archive that stay, in their order."""
    entries = list(entries)
    files: list[str] = []
    for entry in entries:
        if entry.endswith("/"):
            continue
        module = module_of(entry)
        if module is not None:
            if module in keep:
                files.append(entry)
        elif _folder_kept(entry.rpartition("/")[0], keep):
            files.append(entry)
    folders = {
        "/".join(parts[:end]) + "/"
        for file in files
        for parts in [file.split("/")]
        for end in range(1, len(parts))
    }
    chosen = set(files) | folders
    return [entry for entry in entries if entry in chosen]


@dataclass(frozen=True, slots=True)
class Trimmed:
    """What trimming one archive did."""

    name: str
    before: int
    after: int
    dropped: list[str]


def trim_archive(path: Path, keep: Keep) -> Trimmed:
    """Rewrite the archive at ``path`` with only the entries :func:`selected` keeps."""
    before = path.stat().st_size
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        kept = set(selected((info.filename for info in infos), keep))
        tmp = path.with_name(path.name + ".tmp")
        with zipfile.ZipFile(tmp, "w") as out:
            for info in infos:
                if info.filename in kept:
                    # NOTE: the entry's own ZipInfo: same compression (the .pyc stored, which
                    # brotli then compresses best), date and attributes.
                    out.writestr(info, archive.read(info))
    os.replace(tmp, path)
    dropped = sorted(info.filename for info in infos if info.filename not in kept)
    return Trimmed(path.name, before, path.stat().st_size, dropped)


def app_imports(app: Path) -> list[str]:
    """Every module the app's sources name in an import statement, sorted.

    The vendor step's stamp includes them: a new import in app/ traces and trims again.
    """
    found: set[str] = set()
    for source in sorted(app.rglob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"), str(source))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
    return sorted(found)
