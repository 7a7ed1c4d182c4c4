"""Reading the processed files of the data sets without running code, with one-line errors
(docs/spec/design.md#conventions; docs/security.md).

A data set directory may have been received (shared, downloaded, unpacked from an archive). torch_geometric reads
three kinds of file in it with pickle: ``processed/pre_transform.pt`` and ``pre_filter.pt`` with
``torch.load`` and the full unpickler in ``Dataset._process``, and an ``InMemoryDataset``'s processed file with
``fs.torch_load``, which retries with the full unpickler when the safe one refuses. Any of them runs code
that was put into it. Here:

* :class:`SafeProcessing` (a mixin before PyG's class) replaces ``Dataset._process``: the two records are read with
  ``weights_only=True`` (they hold a string: PyG's ``_repr`` of the argument) and compared as PyG compares them; a
  record that is not a plain string is never unpickled further and counts as differing (PyG's warning, which says
  to pass ``force_reload=True``). The records are still written as PyG writes them, so directories made by either
  stay interchangeable.
* :func:`load_processed` reads an ``InMemoryDataset``'s file with :func:`~programl.util.safe_torch.load_tensors`
  (``weights_only=True``, never retried), accepts only PyG's ``(data dict, slices, Data)`` layout and checks the
  slices against the data before any example is read: a damaged or crafted file is a
  :class:`~programl.exceptions.ProgramlError` that names it and says how to redo it, never an ``IndexError`` later.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.data.dataset import _repr, files_exist

from programl.exceptions import ProgramlError
from programl.util.safe_torch import load_tensors

__all__ = ["SafeProcessing", "load_processed"]

#: PyG's records of the ``pre_transform`` / ``pre_filter`` a processed directory was made with.
_RECORDS = (("pre_transform.pt", "pre_transform", "pre-processing"), ("pre_filter.pt", "pre_filter", "pre-filtering"))


class SafeProcessing:
    """Mixin for a torch_geometric ``Dataset``: ``_process`` as PyG's, but reading its records without unpickling
    objects (module docstring). Put it first: ``class DevMap(SafeProcessing, InMemoryDataset)``."""

    def _process(self) -> None:
        for file, attribute, what in _RECORDS:
            path = Path(self.processed_dir) / file
            if not self.force_reload and path.exists() and _saved_record(path) != _repr(getattr(self, attribute)):
                warnings.warn(
                    f"The `{attribute}` argument differs from the one used in the pre-processed version of this "
                    f"dataset (or {path} is not PyG's record of it). If you want to make use of another {what} "
                    "technique, pass `force_reload=True` explicitly to reload the dataset.",
                    stacklevel=2,
                )
        if not self.force_reload and files_exist(self.processed_paths):
            return
        if self.log and "PYTEST_CURRENT_TEST" not in os.environ:
            print("Processing...", file=sys.stderr)
        os.makedirs(self.processed_dir, exist_ok=True)
        self.process()
        for file, attribute, _ in _RECORDS:
            torch.save(_repr(getattr(self, attribute)), os.path.join(self.processed_dir, file))
        if self.log and "PYTEST_CURRENT_TEST" not in os.environ:
            print("Done!", file=sys.stderr)


def _saved_record(path: Path) -> str | None:
    """The string PyG saved in ``path``, or None when the file holds anything else (not unpickled further)."""
    try:
        record = load_tensors(path, what="record")
    except (ProgramlError, OSError):
        return None
    return record if isinstance(record, str) else None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def load_processed(
    dataset: InMemoryDataset,
    data_path: str,
    meta_path: str,
    meta_types: Mapping[str, type] | None = None,
    required: Sequence[str] = ("x", "edge_index"),
) -> dict[str, Any]:
    """Load ``data_path`` into ``dataset`` (as ``InMemoryDataset.load``, without unpickling objects) and return
    the JSON object of ``meta_path``.

    Args:
        meta_types: The entries the JSON object must have, and their types (e.g. ``{"texts": list}``).
        required: Attributes every example must have (their slices are checked against the data).

    Raises:
        ProgramlError: Either file is damaged or crafted (one line; delete it or pass ``force_reload=True``): it is
            not a torch file of tensors and plain values, is not PyG's ``(data, slices, Data)``, its slices do not
            fit its data, an edge names a node its example does not have, or the JSON lacks an entry of
            ``meta_types``.
    """
    path = data_path
    try:
        data, slices = _read_collated(data_path)
        _check_slices(data, slices if slices is not None else _one_example(data), required)
        dataset.data, dataset.slices = data, slices
        path = meta_path
        meta = json.loads(Path(meta_path).read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
        for key, kind in (meta_types or {}).items():
            if not isinstance(meta.get(key), kind):
                raise ValueError(f"no {kind.__name__} {key!r} entry")
        return meta
    except (ProgramlError, OSError, RuntimeError, ValueError, KeyError, TypeError) as error:
        reason = str(error).split(": ", 1)[1] if str(error).startswith(str(path)) else _first_line(error)
        raise ProgramlError(
            f"{path}: a damaged processed file ({reason}); delete it or pass force_reload=True"
        ) from None


def _read_collated(path: str) -> tuple[Data, dict[str, torch.Tensor] | None]:
    """PyG's ``(data.to_dict(), slices, Data)`` of ``path``, read with ``weights_only=True`` (slices None: PyG saves
    a data set of one example as that example)."""
    out = load_tensors(path, what="processed file")
    if not isinstance(out, tuple) or len(out) not in (2, 3):
        raise ValueError(f"holds a {type(out).__name__}, not PyG's (data, slices, Data)")
    if len(out) == 3 and out[2] is not Data:
        raise ValueError(f"holds examples of {getattr(out[2], '__name__', out[2])!r}, not Data")
    data, slices = out[0], out[1]
    if not isinstance(data, dict) or not (slices is None or isinstance(slices, dict)):
        raise ValueError("its data and slices are not dictionaries")
    return Data.from_dict(data), slices


def _one_example(data: Data) -> dict[str, torch.Tensor]:
    """The slices of a data set whose one example is ``data`` (as PyG would cut it), to check it as any other."""
    return {
        key: torch.tensor([0, value.size(data.__cat_dim__(key, value)) if value.dim() else 1])
        if isinstance(value, torch.Tensor)
        else torch.tensor([0, 1])
        for key, value in data.to_dict().items()
    }


def _check_slices(data: Data, slices: Mapping[str, Any], required: Sequence[str]) -> None:
    """Every slice vector is a 1-D integer tensor from 0, non-decreasing, of one length, ending at its attribute's
    size; ``required`` attributes exist; every edge names a node of its own example."""
    missing = [key for key in required if key not in slices or key not in data]
    if missing:
        raise ValueError(f"no {missing[0]!r}")
    count = None
    for key, cuts in slices.items():
        value = data[key] if key in data else None
        if not isinstance(cuts, torch.Tensor) or cuts.dim() != 1 or cuts.dtype != torch.long or len(cuts) == 0:
            raise ValueError(f"the slices of {key!r} are not a vector of offsets")
        if count is None:
            count = len(cuts)
        if len(cuts) != count:
            raise ValueError(f"{key!r} has {len(cuts) - 1} examples, not {count - 1}")
        if int(cuts[0]) != 0 or bool((cuts[1:] < cuts[:-1]).any()):
            raise ValueError(f"the slices of {key!r} do not grow from 0")
        if isinstance(value, torch.Tensor):
            size = value.size(data.__cat_dim__(key, value)) if value.dim() else 1
            if int(cuts[-1]) != size:
                raise ValueError(f"the slices of {key!r} end at {int(cuts[-1])}, not at its size {size}")
    edges, nodes = data["edge_index"], slices["x"]
    if edges.dim() != 2 or edges.size(0) != 2 or edges.dtype != torch.long:
        raise ValueError("edge_index is not a 2 x E integer tensor")
    per_example = nodes[1:] - nodes[:-1]
    owner = torch.repeat_interleave(
        torch.arange(len(per_example)), slices["edge_index"][1:] - slices["edge_index"][:-1]
    )
    if edges.numel() and (bool((edges < 0).any()) or bool((edges >= per_example[owner]).any())):
        raise ValueError("an edge names a node its example does not have")
