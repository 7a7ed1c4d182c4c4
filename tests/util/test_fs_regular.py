"""``read_json`` and ``read_regular_file``, the readers of files a user may have received: a FIFO is never waited on,
a device never read, a file over its cap refused before any of it is read."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from programl.exceptions import ProgramlError
from programl.util.fs import RefusedFileError, read_json, read_regular_file


@pytest.mark.timeout(60)  # (a reader that waits on the FIFO would hang: this ends it)
def test_a_fifo_config_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    with pytest.raises(RefusedFileError) as raised:
        read_json(fifo)
    assert str(raised.value) == f"{fifo}: a FIFO, not a regular file; refusing to read it as a JSON file"


def test_a_device_and_a_directory(tmp_path: Path) -> None:
    with pytest.raises(RefusedFileError, match="a character device, not a regular file"):
        read_json("/dev/zero")
    with pytest.raises(ProgramlError, match=r": a directory, not a file$"):
        read_json(tmp_path)


def test_a_file_over_its_cap_is_not_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b"0," * 100 + b"0]")
    with pytest.raises(RefusedFileError) as raised:
        read_regular_file(big, 10, what="config")
    assert raised.value.why == "203 bytes, more than the 10 it may have"
    assert read_regular_file(big, 1000) == big.read_bytes()
    assert read_json(big) == [0] * 101


def test_the_error_crosses_a_process_pipe_whole() -> None:
    error = pickle.loads(pickle.dumps(RefusedFileError("f: a FIFO, not a regular file", "a FIFO, not a regular file")))
    assert isinstance(error, RefusedFileError) and error.why == "a FIFO, not a regular file"
    assert str(error) == "f: a FIFO, not a regular file"
