"""One run of a code block in the page's sandbox (SPEC §13), as plain data and a pure reducer.

The browser shell (app/browser/code_runner.py) turns what the sandbox posts into
:data:`CodeEvent` values, folds them with :func:`reduce`, and renders the state
(app/ui/code_output.py). Everything here runs under CPython and is unit-tested.

States (``CodeRunState.status``, the ``data-run-state`` of ``[data-code-output]``):

- ``starting``: the sandbox's interpreter is being started (a first Run, or after a reset);
- ``running``: the code runs; output appears as it is printed;
- ``done``: the code ended normally;
- ``error``: the code raised; ``traceback`` holds what Python said;
- ``stopped``: the user pressed Stop; ``state_kept`` says whether the interpreter's variables
  survived (interrupted) or not (the worker was ended and a fresh one will start);
- ``killed``: a bound was hit (``limit``: the time limit or the output size), the worker ended.

Output is a tuple of :class:`Chunk` (stdout and stderr kept apart, in order); neighbouring
chunks of one stream are merged. Output past ``max_chars`` is dropped and ends the run
``killed`` with ``limit="output"``: the shell then ends the worker.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from app.wire.api import AttachmentInfo

RunStatus = Literal["starting", "running", "done", "error", "stopped", "killed"]
Stream = Literal["stdout", "stderr"]
Limit = Literal["time", "output"]
FINAL: frozenset[RunStatus] = frozenset({"done", "error", "stopped", "killed"})

DEFAULT_TIME_LIMIT_MS = 30_000
DEFAULT_MAX_CHARS = 200_000


@dataclass(frozen=True, slots=True)
class Chunk:
    """Text printed to one stream."""

    stream: Stream
    text: str


@dataclass(frozen=True, slots=True)
class OutFile:
    """A file the code wrote under ``/mnt/out/``: offered for download, shown if an image."""

    name: str
    mime: str
    size: int


@dataclass(frozen=True, slots=True)
class CodeRunState:
    """A code block's latest run."""

    run_id: int
    status: RunStatus = "starting"
    output: tuple[Chunk, ...] = ()
    chars: int = 0
    traceback: str = ""
    state_kept: bool | None = None  # after a stop: True interrupted, False reset
    limit: Limit | None = None
    time_limit_ms: int = DEFAULT_TIME_LIMIT_MS
    max_chars: int = DEFAULT_MAX_CHARS
    files: tuple[OutFile, ...] = ()
    fresh: bool = False  # this run started a new interpreter (the first, or after a reset)

    @property
    def finished(self) -> bool:
        """Whether the run has ended (nothing it posts later is applied)."""
        return self.status in FINAL


# --- events ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Started:
    """The interpreter is ready and the code began."""

    run_id: int


@dataclass(frozen=True, slots=True)
class Printed:
    """A batch of output (one animation frame's worth)."""

    run_id: int
    chunks: tuple[Chunk, ...]


@dataclass(frozen=True, slots=True)
class Wrote:
    """Files the code left under ``/mnt/out/``."""

    run_id: int
    files: tuple[OutFile, ...]


@dataclass(frozen=True, slots=True)
class Finished:
    """The code ended: normally (``traceback`` empty) or by raising."""

    run_id: int
    traceback: str = ""


@dataclass(frozen=True, slots=True)
class Stopped:
    """Stop took effect: interrupted (``state_kept``) or the worker ended."""

    run_id: int
    state_kept: bool


@dataclass(frozen=True, slots=True)
class Killed:
    """A bound was hit and the worker ended."""

    run_id: int
    limit: Limit


CodeEvent = Started | Printed | Wrote | Finished | Stopped | Killed


def start(
    run_id: int,
    *,
    fresh: bool,
    time_limit_ms: int = DEFAULT_TIME_LIMIT_MS,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> CodeRunState:
    """A new run of a block, before the sandbox answers."""
    return CodeRunState(
        run_id=run_id, fresh=fresh, time_limit_ms=time_limit_ms, max_chars=max_chars
    )


def reduce(state: CodeRunState, event: CodeEvent) -> CodeRunState:
    """The state after ``event``; the same object when it changes nothing (another run's event,
    or anything after the run ended)."""
    if event.run_id != state.run_id or state.finished:
        return state
    match event:
        case Started():
            return state if state.status == "running" else replace(state, status="running")
        case Printed(chunks=chunks):
            return _printed(state, chunks)
        case Wrote(files=files):
            return replace(state, files=state.files + files) if files else state
        case Finished(traceback=""):
            return replace(state, status="done")
        case Finished(traceback=text):
            return replace(state, status="error", traceback=text)
        case Stopped(state_kept=kept):
            return replace(state, status="stopped", state_kept=kept)
        case Killed(limit=limit):
            return replace(state, status="killed", limit=limit, state_kept=False)
    return state


def _printed(state: CodeRunState, chunks: tuple[Chunk, ...]) -> CodeRunState:
    room = state.max_chars - state.chars
    kept: list[Chunk] = []
    for chunk in chunks:
        if not chunk.text:
            continue
        if room <= 0:
            break
        text = chunk.text[:room]
        room -= len(text)
        kept.append(Chunk(chunk.stream, text))
    over = sum(len(chunk.text) for chunk in chunks) > sum(len(chunk.text) for chunk in kept)
    if not kept and not over:
        return state
    output = merge(state.output, kept)
    added = sum(len(chunk.text) for chunk in kept)
    if over:
        return replace(
            state,
            output=output,
            chars=state.chars + added,
            status="killed",
            limit="output",
            state_kept=False,
        )
    return replace(state, output=output, chars=state.chars + added, status="running")


def merge(output: tuple[Chunk, ...], chunks: list[Chunk]) -> tuple[Chunk, ...]:
    """``output`` followed by ``chunks``, neighbouring chunks of one stream joined."""
    merged = list(output)
    for chunk in chunks:
        if merged and merged[-1].stream == chunk.stream:
            merged[-1] = Chunk(chunk.stream, merged[-1].text + chunk.text)
        else:
            merged.append(chunk)
    return tuple(merged)


# --- words ----------------------------------------------------------------------------------


def words(state: CodeRunState) -> str:
    """What the run's state line says (SPEC §13: each state in words)."""
    match state.status:
        case "starting":
            return "Starting Python…" if state.fresh else "Running…"
        case "running":
            return "Running…"
        case "done":
            return "Done"
        case "error":
            return "Error"
        case "stopped":
            if state.state_kept:
                return "Stopped (KeyboardInterrupt); variables are kept"
            return "Stopped; Python was restarted, so variables were reset"
    return _killed_words(state)


def _killed_words(state: CodeRunState) -> str:
    if state.limit == "time":
        bound = f"the time limit of {_seconds(state.time_limit_ms)}"
    else:
        bound = f"the output limit of {state.max_chars:,} characters"
    return f"Killed: {bound} was reached; Python was restarted, so variables were reset"


def _seconds(ms: int) -> str:
    value = ms / 1000
    return f"{value:g} s"


# --- /mnt/data/ -----------------------------------------------------------------------------


def data_files(attachments: Iterable[AttachmentInfo]) -> tuple[tuple[str, str], ...]:
    """``(attachment id, file name)`` of each distinct attachment, as the code sees it under
    ``/mnt/data/``: a plain name (no folders), made unique (``data (2).csv``) in order."""
    seen_ids: set[str] = set()
    names: set[str] = set()
    files: list[tuple[str, str]] = []
    for attachment in attachments:
        if attachment.attachment_id in seen_ids:
            continue
        seen_ids.add(attachment.attachment_id)
        name = _unique(_plain(attachment.name), names)
        names.add(name)
        files.append((attachment.attachment_id, name))
    return tuple(files)


def _plain(name: str) -> str:
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip().replace("\x00", "")
    return base if base not in ("", ".", "..") else "file"


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem:
        stem, suffix = name, ""
    number = 2
    while True:
        candidate = f"{stem} ({number})" + (f".{suffix}" if suffix else "")
        if candidate not in taken:
            return candidate
        number += 1
