"""Reading torch files that a user may have received without running code from them (docs/security.md).

Every ``.pt`` file this package reads (a run's ``best.pt`` / ``last.pt``, an exported ``weights.pt``, a data set's
processed file) may come from someone else: a pickle can run any code while it is read. :func:`load_tensors` is
the one way the package reads such a file: ``torch.load(..., weights_only=True)``, whose unpickler builds only
tensors, containers (dict, list, tuple, OrderedDict) and plain values (str, int, float, bool, None), plus the
explicit allow-list below and nothing else. A file that asks for anything more is refused with one line; nothing
is ever retried with the unsafe unpickler.

The allow-list:

* numpy's array reconstruction and its ``uint32`` dtype (:data:`NUMPY_RNG_GLOBALS`): the RNG state of checkpoints
  written by earlier versions (numpy's Mersenne-Twister key is a ``uint32`` array). Checkpoints written now hold it as a
  list of ints and need no allow-list.
* ``extra_globals``: what a caller names for its own file format, e.g. torch_geometric's storage classes for a
  processed data set (:mod:`programl.datasets.processed`).

Before any of that, a received file is read only when it is a regular file (:func:`read_regular_file`, what
:func:`load_tensors` reads a path with): a name that leads to a FIFO, a device such as ``/dev/zero``, a socket or a
directory (a symlink is followed first) is refused in one line without being read, so a read can neither block nor
run without end; a caller that knows how large the file may be (a model's ``model.json`` records it) gives that
bound, and a larger file is refused before any of it is read.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import Any

from programl.exceptions import ProgramlError
from programl.util.fs import read_regular_file

__all__ = ["NUMPY_RNG_GLOBALS", "UnsafeFileError", "load_tensors", "read_regular_file"]


class UnsafeFileError(ProgramlError):
    """A file holds (or is) something other than tensors and plain values, and was not read."""


def _numpy_rng_globals() -> list[Any]:
    import numpy as np

    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # numpy < 2
        from numpy.core.multiarray import _reconstruct  # type: ignore[no-redef]
    return [np.ndarray, np.dtype, _reconstruct, type(np.dtype(np.uint32))]


#: The numpy globals an older checkpoint's RNG state needs (a callable, so that importing this module stays cheap).
NUMPY_RNG_GLOBALS = _numpy_rng_globals


def load_tensors(
    source: str | os.PathLike | bytes,
    *,
    map_location: Any = "cpu",
    extra_globals: Sequence[Any] = (),
    what: str = "file",
    name: str | None = None,
    max_bytes: int | None = None,
) -> Any:
    """Read a torch file with ``weights_only=True`` (module docstring): tensors and plain values only.

    Args:
        source: A path (read with :func:`read_regular_file`), or the file's bytes.
        map_location: As for ``torch.load``.
        extra_globals: Globals allowed besides tensors and plain values (and numpy's RNG state).
        what: What the file should be, for the error ("checkpoint", "weights file", "processed file").
        name: How to name the file in errors (default: the path; ``"<bytes>"`` for bytes).
        max_bytes: The largest file read from a path (default: any size a regular file has).

    Raises:
        UnsafeFileError: The file asks the unpickler for a global outside the allow-list (it is not read).
        ProgramlError: The file is not a regular file, is larger than ``max_bytes``, is not a torch file at all, or
            is damaged (one line).
        OSError: The file cannot be opened (the caller reports it).
    """
    import pickle
    import warnings

    import torch

    label = name if name is not None else ("<bytes>" if isinstance(source, bytes) else os.fspath(source))
    data = source if isinstance(source, bytes) else read_regular_file(source, max_bytes, what=what, name=label)
    if not data.startswith((b"PK\x03\x04", b"\x80")):  # torch's zip format, or a legacy pickle
        raise ProgramlError(f"{label}: not a readable {what} (not a file torch.save writes)")
    allowed = [*NUMPY_RNG_GLOBALS(), *extra_globals]
    try:
        with torch.serialization.safe_globals(allowed), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns of pickle protocols before it refuses them
            return torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)
    except OSError:
        raise
    except pickle.UnpicklingError as error:
        text = str(error)
        if "weights_only" in text or "Unsupported global" in text or "safe_globals" in text:
            raise UnsafeFileError(
                f"{label}: not a readable {what} (it holds {_refused_global(text)}, not only tensors and plain "
                "values; refusing to unpickle it)"
            ) from None
        raise ProgramlError(f"{label}: not a readable {what} ({_first_line(text)})") from None
    except Exception as error:  # noqa: BLE001 - a damaged zip or pickle raises many types; one line whatever it is
        raise ProgramlError(
            f"{label}: not a readable {what} ({_first_line(str(error)) or type(error).__name__})"
        ) from None


def _refused_global(text: str) -> str:
    """The global torch refused, from its message ("Unsupported global: GLOBAL os.system ..."), or a generic phrase."""
    marker = "GLOBAL "
    at = text.find(marker)
    if at >= 0:
        name = text[at + len(marker) :].split()[0].rstrip(".,;:")
        return f"a reference to {name}"
    for marker in ("Unsupported operand", "Unsupported class"):
        if marker in text:
            return "an object torch's safe unpickler does not build"
    return "objects other than tensors"


def _first_line(text: str) -> str:
    """The first line of an error message, cut at its first sentence (torch's messages run on)."""
    text = text.strip()
    if not text:
        return ""
    head, dot, _ = text.splitlines()[0].partition(". ")
    return (head + dot).strip()[:200]
