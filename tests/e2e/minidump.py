"""What a Chromium minidump says about a crash: the signal, where it struck, in which module.

Chromium's crash handler (crashpad) writes a minidump of every renderer that dies to
``$XDG_CONFIG_HOME/chromium/Crash Reports/pending`` (Debian's build writes them without
uploading anything). A renderer that dies of a signal leaves no line in Chromium's log, so
the dump is the only witness of what killed it: :func:`read_crash` reads the exception stream
(on Linux the signal and its ``si_code``), the faulting instruction's address from the thread's
context, and the module that holds it. This is how issue 39's crash was named (docs/runtime.md).

The format is Microsoft's MINIDUMP (minidumpapiset.h); only the streams read here are parsed.
"""

from __future__ import annotations

import signal
import struct
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"MDMP"
MODULE_LIST_STREAM = 4
EXCEPTION_STREAM = 6
MODULE_SIZE = 108
# NOTE: MINIDUMP_CONTEXT_AMD64: the instruction pointer's offset in the thread's context
AMD64_RIP_OFFSET = 0xF8
AMD64_CONTEXT_SIZE = 0x4D0
# NOTE: si_code of SIGSEGV (asm-generic/siginfo.h)
SEGV_CODES = {
    1: "SEGV_MAPERR (no mapping at that address)",
    2: "SEGV_ACCERR (mapped, not accessible)",
}


@dataclass(frozen=True, slots=True)
class Module:
    name: str
    base: int
    size: int

    def holds(self, address: int) -> bool:
        return self.base <= address < self.base + self.size


@dataclass(frozen=True, slots=True)
class Crash:
    """The exception a minidump records."""

    signal_number: int
    code: int
    fault_address: int
    instruction: int | None
    module: Module | None

    def in_words(self) -> str:
        try:
            name = signal.Signals(self.signal_number).name
        except ValueError:
            name = f"signal {self.signal_number}"
        code = (
            SEGV_CODES.get(self.code, f"code {self.code}")
            if name == "SIGSEGV"
            else f"code {self.code}"
        )
        where = "unknown"
        if self.instruction is not None:
            where = f"{self.instruction:#x}"
            if self.module is not None:
                where = f"{Path(self.module.name).name}+{self.instruction - self.module.base:#x}"
        return f"{name} {code} touching {self.fault_address:#x}, instruction at {where}"


def read_crash(dump: bytes) -> Crash | None:
    """The crash ``dump`` records, or None when it is not a minidump with an exception."""
    if len(dump) < 32 or dump[:4] != MAGIC:
        return None
    count, directory = struct.unpack_from("<II", dump, 8)
    streams = {}
    for index in range(count):
        kind, size, rva = struct.unpack_from("<III", dump, directory + 12 * index)
        streams[kind] = (size, rva)
    if EXCEPTION_STREAM not in streams:
        return None
    _size, rva = streams[EXCEPTION_STREAM]
    code, flags = struct.unpack_from("<II", dump, rva + 8)
    (address,) = struct.unpack_from("<Q", dump, rva + 24)
    context_size, context_rva = struct.unpack_from("<II", dump, rva + 8 + 152)
    instruction = None
    if context_size >= AMD64_CONTEXT_SIZE:
        (instruction,) = struct.unpack_from("<Q", dump, context_rva + AMD64_RIP_OFFSET)
    modules = _modules(dump, *streams.get(MODULE_LIST_STREAM, (0, 0)))
    holder = next((m for m in modules if instruction is not None and m.holds(instruction)), None)
    return Crash(code, flags, address, instruction, holder)


def _modules(dump: bytes, size: int, rva: int) -> list[Module]:
    if size < 4:
        return []
    (count,) = struct.unpack_from("<I", dump, rva)
    found = []
    for index in range(count):
        at = rva + 4 + MODULE_SIZE * index
        base, length = struct.unpack_from("<QI", dump, at)
        (name_rva,) = struct.unpack_from("<I", dump, at + 20)
        (name_bytes,) = struct.unpack_from("<I", dump, name_rva)
        name = dump[name_rva + 4 : name_rva + 4 + name_bytes].decode("utf-16-le", errors="replace")
        found.append(Module(name, base, length))
    return found


def crashes_in(folder: Path, since: float) -> list[str]:
    """Each minidump written under ``folder`` after ``since`` (a time.time()), in words."""
    found = []
    for dump in sorted(folder.rglob("*.dmp")):
        try:
            if dump.stat().st_mtime < since:
                continue
            crash = read_crash(dump.read_bytes())
        except OSError:
            continue
        found.append(f"{dump.name}: {crash.in_words() if crash else 'no exception recorded'}")
    return found
