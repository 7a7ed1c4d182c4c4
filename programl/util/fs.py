"""Atomic file writes: a reader (or a crash) never sees a half-written output file (docs/spec/datasets.md#builds);
:func:`write_bytes` and :func:`write_json` (atomic, and an ``OSError`` names the file), :func:`jsonable` (numpy and
torch values, paths); :func:`read_json`, which reads a JSON file or says in one line why it cannot; and
:func:`sha256_file`, a file's checksum.

Data is written to a temporary file in the destination directory, flushed, and renamed over the destination
(``os.replace`` is atomic on POSIX file systems). The file gets the mode any program's new file gets, ``0o666``
less the process umask (``0o644`` under the usual umask 022): ``tempfile.mkstemp`` alone would leave it ``0o600``,
unreadable to other users.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

from programl.exceptions import ProgramlError

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "current_umask",
    "MAX_JSON_BYTES",
    "RefusedFileError",
    "jsonable",
    "output_directory_problem",
    "read_json",
    "read_regular_file",
    "sha256_file",
    "write_bytes",
    "write_json",
]

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where the OS says it (Linux ``/proc/self/status``)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # elsewhere: set and restore (a race only with threads that create files meanwhile)
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically, creating parent directories. Returns the path.

    The file's mode is ``0o666 & ~umask``, as for ``open(path, "wb")``.

    Raises:
        OSError: The directory cannot be created or written (no space left, permission denied, ...); no temporary
            file is left behind and an existing ``path`` is unchanged.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~current_umask())
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    return atomic_write_bytes(path, text.encode(encoding))


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """:func:`atomic_write_bytes`, whose ``OSError`` names the file (a write to a full disk does not say which).

    Raises:
        OSError: As :func:`atomic_write_bytes`, with ``filename`` set to ``path`` when the error had none.
    """
    try:
        return atomic_write_bytes(path, data)
    except OSError as error:
        if error.filename is None and error.errno is not None:
            raise OSError(error.errno, error.strerror or str(error), str(path)) from None
        raise


def jsonable(value: Any) -> Any:
    """``value`` as JSON can hold it, for ``json.dumps(default=jsonable)``: anything with ``tolist()`` (numpy arrays
    and scalars, tensors) as a list or number, a path as its string.

    Raises:
        TypeError: Any other value (``json.dumps``'s contract for ``default``).
    """
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented JSON with sorted keys and a final newline, atomically (:func:`write_bytes`;
    :func:`jsonable` values too). Returns the path."""
    return write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True, default=jsonable) + "\n").encode("utf-8"))


def output_directory_problem(path: str | os.PathLike) -> str | None:
    """Create the output directory ``path`` (``-o DIR``) when needed; what stops it from taking outputs, or None.

    Returns:
        None when ``path`` is a writable directory now, else one line such as ``out.txt: not a directory (a file of
        that name exists)`` or ``/proc/x: cannot create the directory: Permission denied``.
    """
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        return f"{path}: not a directory (a file of that name exists)"
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        reason = error.strerror or str(error)
        if isinstance(error, (FileExistsError, NotADirectoryError)):
            reason = "a part of the path is a file"
        return f"{path}: cannot create the directory: {reason}"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{path}: the directory is not writable"
    return None


#: What :func:`read_regular_file` calls a file of each kind that is not a regular file.
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class RefusedFileError(ProgramlError):
    """A file that :func:`read_regular_file` does not read: not a regular file, or larger than it may be. ``why``
    says which without the file's name (``a FIFO, not a regular file``), for readers that word their own line."""

    def __init__(self, message: str, why: str = "") -> None:
        super().__init__(message)
        self.why = why

    def __reduce__(self):  # it crosses the pipe from a worker process whole
        return type(self), (str(self), self.why)


def _check_regular(mode: int, label: str, what: str) -> None:
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a plain file")
        why = f"{kind}, not a regular file"
        raise RefusedFileError(f"{label}: {why}; refusing to read it as a {what}", why)


def read_regular_file(
    path: str | os.PathLike, max_bytes: int | None = None, *, what: str = "file", name: str | None = None
) -> bytes:
    """The bytes of a file that may have been received, read only when it is a regular file of at most
    ``max_bytes`` bytes (module docstring).

    The name is resolved (symlinks followed) and checked with ``os.stat`` before it is opened, then opened with
    ``O_NONBLOCK`` and checked again on the descriptor (the file read is the file checked): a FIFO, a device, a
    socket or a directory is never read, and a file larger than ``max_bytes`` is refused before any of it is.

    Args:
        path: The file.
        max_bytes: The largest size accepted (None: any size).
        what: What the file should be, for the error ("weights file", "vocabulary", ...).
        name: How to name the file in errors (default: the path).

    Raises:
        RefusedFileError: One line naming the file: not a regular file, or larger than ``max_bytes``.
        ProgramlError: Its size changed while it was read.
        OSError: The file does not exist or cannot be opened (the caller reports it).
    """
    label = name if name is not None else os.fspath(path)
    _check_regular(os.stat(path).st_mode, label, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    with open(fd, "rb", buffering=0, closefd=True) as f:
        info = os.fstat(fd)
        _check_regular(info.st_mode, label, what)
        size = info.st_size
        if max_bytes is not None and size > max_bytes:
            raise RefusedFileError(
                f"{label}: {size:,} bytes, more than a {what} may have ({max_bytes:,}); refusing to read it",
                f"{size:,} bytes, more than the {max_bytes:,} it may have",
            )
        chunks, got = [], 0
        while got <= size:  # up to one byte more than the size said: a file that grows meanwhile is caught
            chunk = f.read(size + 1 - got)  # one read returns at most about 2 GiB
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(data) != size:
        raise ProgramlError(f"{label}: its size changed while it was read ({size:,} bytes, then {len(data):,})")
    return data


#: The largest JSON file :func:`read_json` reads (configs, results, metadata: far smaller in practice).
MAX_JSON_BYTES = 256 << 20


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value in the file ``path`` (read only when it is a regular file: a FIFO is not waited on).

    Raises:
        ProgramlError: One line naming the file: ``no such file``, ``a directory, not a file``, or ``not JSON``
            (with the line and column of a syntax error, e.g. ``run/result.json:3:1: not JSON (Expecting value)``).
    """
    path = Path(path)
    try:
        return json.loads(read_regular_file(path, MAX_JSON_BYTES, what="JSON file").decode("utf-8"))
    except FileNotFoundError:
        raise ProgramlError(f"{path}: no such file") from None
    except RefusedFileError as error:
        if error.why.startswith("a directory"):
            raise ProgramlError(f"{path}: a directory, not a file") from None
        raise
    except UnicodeDecodeError as error:
        raise ProgramlError(f"{path}: not JSON ({error.reason})") from None
    except json.JSONDecodeError as error:
        raise ProgramlError(f"{path}:{error.lineno}:{error.colno}: not JSON ({error.msg})") from None
    except OSError as error:
        raise ProgramlError(f"{path}: cannot read: {error.strerror or error}") from None


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    """The hex sha256 of a file, read ``chunk_size`` bytes at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()
