"""Reading the processed files of the in-memory data sets, with one-line errors (issue 10 item 1; DESIGN §6).

A processed file that cannot be read (truncated, overwritten, from another version) is a
:class:`~programl.exceptions.ProgramlError` that names it and says how to redo it, not a traceback from ``torch.load``
or ``json``.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torch_geometric.data import InMemoryDataset

from programl.exceptions import ProgramlError

__all__ = ["load_processed"]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def load_processed(
    dataset: InMemoryDataset, data_path: str, meta_path: str, meta_types: Mapping[str, type] | None = None
) -> dict[str, Any]:
    """Load ``data_path`` into ``dataset`` (``InMemoryDataset.load``) and return the JSON object of ``meta_path``.

    Args:
        meta_types: The entries the JSON object must have, and their types (e.g. ``{"texts": list}``).

    Raises:
        ProgramlError: Either file is damaged (one line; delete it or pass ``force_reload=True``): it does not
            load, holds something other than PyG's ``(data, slices, ...)`` (PyG asserts that), or the JSON lacks
            an entry of ``meta_types``.
    """
    path = data_path
    try:
        dataset.load(data_path)
        path = meta_path
        meta = json.loads(Path(meta_path).read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
        for key, kind in (meta_types or {}).items():
            if not isinstance(meta.get(key), kind):
                raise ValueError(f"no {kind.__name__} {key!r} entry")
        return meta
    except (
        OSError,
        EOFError,
        RuntimeError,
        ValueError,
        KeyError,
        TypeError,
        AssertionError,  # InMemoryDataset.load of an object that is not (data, slices[, data_cls])
        AttributeError,  # ... of a tuple whose first item is not a dict
        pickle.UnpicklingError,
    ) as error:
        raise ProgramlError(
            f"{path}: a damaged processed file ({_first_line(error)}); delete it or pass force_reload=True"
        ) from None
