"""The object-size reader: the executable sections of an llc-22 object, and what it refuses."""

from __future__ import annotations

import struct
import subprocess

import pytest

from programl.gym.elf import ElfError, text_size

from .conftest import GYM_DATA


def test_text_size_is_the_text_section(llc22, tmp_path) -> None:
    obj = tmp_path / "features.o"
    subprocess.run([llc22, "-O0", "-filetype=obj", "-mtriple=x86_64-unknown-linux-gnu", str(GYM_DATA / "features.ll"),
                    "-o", str(obj)], check=True, timeout=120)  # fmt: skip
    data = obj.read_bytes()
    # the .text section's size from the section header table, found by its name
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx][4]
    names = {data[strtab + h[0] : data.index(b"\0", strtab + h[0])].decode(): h for h in headers}
    assert text_size(data) == names[".text"][5] > 0


@pytest.mark.parametrize("data", [b"", b"\x7fELF", b"not an object at all" * 4, b"\x7fELF\x02\x01" + b"\xff" * 80])
def test_text_size_refuses_what_is_not_elf(data) -> None:
    with pytest.raises(ElfError):
        text_size(data)
