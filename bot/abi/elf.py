"""A cheap sanity check of an ELF shared library's header, before ``nm`` reads it.

torch-abi-audit reports a file ``nm`` cannot read (garbage, truncated by a
broken download or extraction) as "no torch": the same verdict as a genuinely
stable-or-unrelated library, which would make an allowlist entry look stale.
Checking the header and that the tables it points at lie inside the file turns
that into an inspection error instead.
"""

from __future__ import annotations

import struct
from pathlib import Path

_MAGIC = b"\x7fELF"
_ET_DYN = 3
# Offsets after e_ident (16 bytes): type, machine, version, entry, phoff, shoff,
# flags, ehsize, phentsize, phnum, shentsize, shnum, shstrndx.
_LAYOUTS = {1: "HHIIIIIHHHHHH", 2: "HHIQQQIHHHHHH"}  # EI_CLASS: 1 = 32-bit, 2 = 64-bit
_BYTE_ORDERS = {1: "<", 2: ">"}  # EI_DATA

NOT_ELF = "not an ELF file"
BAD_HEADER = "damaged ELF header"
NOT_SHARED = "not an ELF shared object (type {type})"
TRUNCATED = "truncated: its {table} table ends past the end of the file ({size} bytes)"


def elf_problem(path: Path) -> str | None:
    """Why ``path`` is not a sound ELF shared object, or ``None`` if it looks sound."""
    size = path.stat().st_size
    with path.open("rb") as file:
        header = file.read(64)
    if header[:4] != _MAGIC:
        return NOT_ELF
    layout = _LAYOUTS.get(header[4])
    order = _BYTE_ORDERS.get(header[5])
    if layout is None or order is None:
        return BAD_HEADER
    fmt = order + layout
    if len(header) < 16 + struct.calcsize(fmt):
        return BAD_HEADER
    fields = struct.unpack_from(fmt, header, 16)
    elf_type, phoff, shoff = fields[0], fields[4], fields[5]
    phentsize, phnum, shentsize, shnum = fields[8], fields[9], fields[10], fields[11]
    if elf_type != _ET_DYN:
        return NOT_SHARED.format(type=elf_type)
    if phoff + phentsize * phnum > size:
        return TRUNCATED.format(table="program header", size=size)
    if shoff and shoff + shentsize * shnum > size:
        return TRUNCATED.format(table="section header", size=size)
    return None
