"""The code size of an ELF object file: the bytes of its executable sections (docs/gym.md#observations).

Read with ``struct`` from the section header table (ELF32 and ELF64, either byte order), so no ELF library is
needed. What counts is every section with the ``SHF_ALLOC`` and ``SHF_EXECINSTR`` flags: ``.text`` and, for
functions in COMDAT groups (C++ inline functions, templates), their own ``.text.<name>`` sections.
"""

from __future__ import annotations

import struct

__all__ = ["ElfError", "text_size"]

_SHF_ALLOC = 0x2
_SHF_EXECINSTR = 0x4


class ElfError(ValueError):
    """The bytes are not an ELF object this reader understands (the message says why)."""


def text_size(data: bytes) -> int:
    """The total size in bytes of the executable sections of an ELF object.

    Raises:
        ElfError: ``data`` is not ELF, or its section header table lies outside it.
    """
    if len(data) < 52 or data[:4] != b"\x7fELF":
        raise ElfError("not an ELF object file")
    klass, encoding = data[4], data[5]
    if klass not in (1, 2) or encoding not in (1, 2):
        raise ElfError(f"unknown ELF class {klass} or data encoding {encoding}")
    order = "<" if encoding == 1 else ">"
    if klass == 2:  # ELF64
        if len(data) < 64:
            raise ElfError("truncated ELF header")
        shoff, shentsize, shnum = _unpack(order + "Q", data, 0x28)[0], *_unpack(order + "HH", data, 0x3A)
        entry = struct.Struct(order + "IIQQQQIIQQ")  # name type flags addr offset size link info align entsize
        flags_at, type_at, size_at = 2, 1, 5
    else:  # ELF32
        shoff, shentsize, shnum = _unpack(order + "I", data, 0x20)[0], *_unpack(order + "HH", data, 0x2E)
        entry = struct.Struct(order + "IIIIIIIIII")
        flags_at, type_at, size_at = 2, 1, 5
    if shnum == 0 and shoff:  # more sections than fit the field: the count is in the first entry's size
        shnum = _unpack(entry.format, data, shoff)[size_at]
    if shentsize < entry.size or shoff + shnum * shentsize > len(data):
        raise ElfError("section header table out of bounds")
    total = 0
    for index in range(shnum):
        fields = entry.unpack_from(data, shoff + index * shentsize)
        flags = fields[flags_at]
        if flags & _SHF_ALLOC and flags & _SHF_EXECINSTR and fields[type_at] != 0:
            total += fields[size_at]
    return total


def _unpack(fmt: str, data: bytes, offset: int) -> tuple:
    try:
        return struct.unpack_from(fmt, data, offset)
    except struct.error:
        raise ElfError("truncated ELF header") from None
