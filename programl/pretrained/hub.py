"""Pretrained models shipped inside the package: the on-disk format, listing and loading (the
models of docs/spec/tasks.md).

A pretrained model is a directory ``programl/pretrained/weights/<name>/`` (or any directory of the same form) holding

* ``weights.pt`` - the model's ``state_dict`` only, read with ``torch.load(..., weights_only=True)`` (a file that
  holds anything else is refused, never unpickled);
* ``vocab.csv`` - the node-text vocabulary the model was trained with (:mod:`programl.data.vocabulary` format);
* ``model.json`` - what the model is and how to use it: ``format``
  (:data:`~programl.pretrained.metadata.FORMAT`), ``name``, ``task`` (``dataflow``, ``devmap`` or ``classifyapp``,
  any task of :data:`programl.tasks.registry.TASKS`) with ``analysis`` / ``platform`` where they apply, ``model`` (the
  :mod:`programl.models` class and its constructor arguments, see :func:`build_model`), ``vocabulary`` and
  ``weights`` (file names and sha256, both required: a file is checked before it is read, and a model whose
  ``model.json`` records no sha256 is refused), ``steps`` (message-passing steps of a data-flow model), ``outputs`` (the
  meaning of the output classes, e.g. ``["CPU", "GPU"]`` for devmap), ``inputs`` (how source files are compiled for
  it), ``scores`` (copied from the run's ``result.json``) and ``training`` (the run directory, its ``config.json``,
  the command and commit that trained it where known);
* ``MODEL_CARD.md`` - data, protocol, scores, compute, limitations, for people.

A model directory may have been received from anyone: every field of ``model.json`` is checked, with an upper limit
for every number (:mod:`programl.pretrained.metadata`), and each file is read only when it is a regular file (a
symlink to ``/dev/zero`` or a FIFO in its place is refused, never read) of the size ``model.json`` records, or under
a cap where it records none (:func:`~programl.util.safe_torch.read_regular_file`), before its sha256 is checked.
:func:`find_model` reads ``model.json`` alone (what ``programl predict`` checks in its own process);
:func:`pretrained` then reads the files and builds the network (``programl predict`` does that in its worker, under
``--timeout`` and ``--max-memory``).

:func:`programl.pretrained.export.export_pretrained` makes such a directory from a finished run (``programl
export-pretrained``); :func:`pretrained` loads one and :func:`pretrained_names` lists those shipped.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from programl.exceptions import ProgramlError
from programl.models.build import build_model, model_classes
from programl.pretrained.metadata import (
    FORMAT,
    MAX_CARD_BYTES,
    MAX_METADATA_BYTES,
    MAX_VOCABULARY_BYTES,
    MAX_WEIGHTS_BYTES,
    check_metadata,
    vocabulary_sizes,
)
from programl.tasks.registry import TASKS as _REGISTRY
from programl.tasks.registry import get_task
from programl.util.safe_torch import load_tensors, read_regular_file

__all__ = [
    "FORMAT",
    "PRETRAINED_DIR",
    "TASKS",
    "ModelInfo",
    "PretrainedModel",
    "build_model",
    "default_pretrained",
    "find_model",
    "find_pretrained",
    "find_pretrained_metadata",
    "model_classes",
    "pretrained",
    "pretrained_names",
    "read_metadata",
]

#: Where the shipped models live (one subdirectory per model).
PRETRAINED_DIR = Path(__file__).resolve().parent / "weights"
#: The tasks a pretrained model can be for: :data:`programl.tasks.registry.TASKS` itself (a task registered later
#: is one too).
TASKS = _REGISTRY
METADATA_FILE = "model.json"
CARD_FILE = "MODEL_CARD.md"
#: The largest file of each entry of ``model.json`` when it records no size, and what the file is called in errors.
_FILES = {"weights": (MAX_WEIGHTS_BYTES, "weights file"), "vocabulary": (MAX_VOCABULARY_BYTES, "vocabulary")}


def sha256_bytes(data: bytes) -> str:
    """The hex sha256 of ``data`` (what ``model.json`` records of each file)."""
    return hashlib.sha256(data).hexdigest()


def read_metadata(directory: str | os.PathLike) -> dict[str, Any]:
    """The ``model.json`` of a pretrained-model directory, checked field by field
    (:func:`~programl.pretrained.metadata.check_metadata`).

    Raises:
        ProgramlError: One line: no ``model.json``, not a regular file or larger than
            :data:`~programl.pretrained.metadata.MAX_METADATA_BYTES`, not JSON, a newer format, an entry missing, or
            a field of the wrong type or out of range (named).
    """
    path = Path(directory) / METADATA_FILE
    if not path.exists():
        raise ProgramlError(f"{directory}: not a pretrained model (no {METADATA_FILE})")
    try:
        data = read_regular_file(path, MAX_METADATA_BYTES, what=METADATA_FILE)
    except OSError as error:
        raise ProgramlError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        metadata = json.loads(data.decode("utf-8"), parse_constant=_not_json)
    except UnicodeDecodeError as error:
        raise ProgramlError(f"{path}: not JSON ({error.reason})") from None
    except json.JSONDecodeError as error:
        raise ProgramlError(f"{path}:{error.lineno}:{error.colno}: not JSON ({error.msg})") from None
    except RecursionError:
        raise ProgramlError(f"{path}: not JSON this programl reads (nested too deeply)") from None
    except ValueError as error:  # NaN, Infinity; an integer of thousands of digits
        raise ProgramlError(f"{path}: not JSON ({str(error).splitlines()[0][:200]})") from None
    return check_metadata(metadata, path)


def _not_json(constant: str):
    """``json.loads``'s ``parse_constant``: NaN and Infinity are not JSON (Python's reader takes them)."""
    raise ValueError(f"{constant} is not a JSON number")


def _reason(error: BaseException) -> str:
    """The first line of ``error`` (at most 200 characters), without torch's advice on its unsafe unpickler: the
    loader never unpickles code, so that advice is never passed on."""
    lines = str(error).strip().splitlines()
    first = lines[0][:200] if lines else type(error).__name__
    return type(error).__name__ if "weights_only" in first else first


def _read_state_dict(file: Path, data: bytes) -> dict:
    """The tensors of a weights file (:func:`~programl.util.safe_torch.load_tensors`: ``weights_only=True``, only
    tensors and plain containers).

    Raises:
        ProgramlError: One line: the file holds something other than tensors (pickled code or objects, which is
            refused, never unpickled), is not a torch file at all, or is not a ``state_dict``.
    """
    import torch

    state = load_tensors(data, what="weights file", name=str(file))
    if not isinstance(state, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise ProgramlError(f"{file}: not a readable weights file (expected a state_dict of named tensors)")
    return state


def _model_dirs(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(d for d in directory.iterdir() if (d / METADATA_FILE).is_file())


def pretrained_names(directory: str | os.PathLike | None = None) -> list[str]:
    """Names of the pretrained models in ``directory`` (default: those shipped in the package), sorted."""
    return [d.name for d in _model_dirs(Path(directory) if directory is not None else PRETRAINED_DIR)]


def _resolve(name: str | os.PathLike, directory: str | os.PathLike | None) -> Path:
    """The directory of model ``name``: a path to a model directory, or a name in ``directory``."""
    text = os.fspath(name)
    if not isinstance(name, str) or "/" in text or os.sep in text or text.startswith("."):  # a path
        if not Path(text, METADATA_FILE).exists():  # one that is not a regular file: read_metadata says so
            raise ProgramlError(f"{text}: not a pretrained model (no {METADATA_FILE})")
        return Path(text)
    root = Path(directory) if directory is not None else PRETRAINED_DIR
    candidate = root / text
    if text and (candidate / METADATA_FILE).exists():
        return candidate
    known = pretrained_names(root)
    where = "in this package" if directory is None else f"in {root}"
    listing = f"known: {', '.join(known)}" if known else f"none are installed {where} yet (programl export-pretrained)"
    raise ProgramlError(f"unknown pretrained model {text!r}; {listing}")


@dataclass
class ModelInfo:
    """A pretrained model's directory and its checked ``model.json``, not loaded (:func:`find_model`).

    Attributes:
        name: The model's name (its directory's).
        directory: Where it is.
        metadata: The contents of ``model.json`` (module docstring), checked.
    """

    name: str
    directory: Path
    metadata: dict[str, Any]

    @property
    def task(self) -> str:
        """The task the model was trained for (``dataflow``, ``devmap``, ``classifyapp``)."""
        return self.metadata["task"]

    @property
    def analysis(self) -> str | None:
        """The analysis of a data-flow model (else None)."""
        return self.metadata.get("analysis")

    @property
    def platform(self) -> str | None:
        """The platform (``amd`` / ``nvidia``) of a devmap model (else None)."""
        return self.metadata.get("platform")

    @property
    def classes(self) -> list[str]:
        """What each output class means, in output order."""
        return list(self.metadata["outputs"]["classes"])

    @property
    def card(self) -> str:
        """The text of ``MODEL_CARD.md`` ("" when there is none).

        Raises:
            ProgramlError: The card is not a regular file, is larger than
                :data:`~programl.pretrained.metadata.MAX_CARD_BYTES`, or is not UTF-8 text (one line).
        """
        path = self.directory / CARD_FILE
        if not path.exists():
            return ""
        try:
            return read_regular_file(path, MAX_CARD_BYTES, what="model card").decode("utf-8")
        except OSError as error:
            raise ProgramlError(f"{path}: cannot read: {error.strerror or error}") from None
        except UnicodeDecodeError as error:
            raise ProgramlError(f"{path}: not UTF-8 text ({error.reason})") from None


@dataclass
class PretrainedModel(ModelInfo):
    """A loaded pretrained model: the network in eval mode, its vocabulary and its metadata.

    Attributes:
        name: The model's name (its directory's).
        directory: Where it was loaded from.
        metadata: The contents of ``model.json`` (module docstring).
        model: The ``torch.nn.Module``, in eval mode, on ``device``.
        vocabulary: The :class:`~programl.data.vocabulary.Vocabulary` of its inputs.
    """

    model: Any
    vocabulary: Any
    device: Any = field(default="cpu")

    def predict(self, graph, **options):
        """Predict on a ``ProgramGraph``: the task's :meth:`~programl.tasks.base.TaskSpec.predict`, which runs its
        :class:`~programl.tasks.predict.Predictor` with this model (e.g.
        :class:`~programl.tasks.dataflow.predict.DataflowPredictor`; ``options`` are its ``preprocess``'s keyword
        arguments)."""
        return get_task(self.task, str(self.directory / METADATA_FILE)).predict(self, graph, **options)


def find_model(name: str | os.PathLike, *, directory: str | os.PathLike | None = None) -> ModelInfo:
    """A pretrained model's directory and checked ``model.json``, without reading its other files.

    Args:
        name: As for :func:`pretrained`.
        directory: As for :func:`pretrained`.

    Raises:
        ProgramlError: One line: an unknown name (the known ones listed), or a ``model.json`` that
            :func:`read_metadata` refuses.
    """
    path = _resolve(name, directory)
    return ModelInfo(path.name, path, read_metadata(path))


def _read_model_file(path: Path, metadata: Mapping[str, Any], key: str) -> bytes:
    """The bytes of the ``weights`` or ``vocabulary`` file of a model: a regular file (never a FIFO or a device) of
    the size ``model.json`` records (or at most the cap of :data:`_FILES` where it records none), whose sha256 is
    the one recorded.

    Raises:
        ProgramlError: One line naming the file.
    """
    entry = metadata[key]
    file = path / entry["file"]
    cap, what = _FILES[key]
    recorded = entry.get("bytes")
    try:
        info = os.stat(file)
        if recorded is not None and info.st_size != recorded and os.path.isfile(file):
            raise ProgramlError(f"{file}: damaged ({info.st_size:,} bytes, and {METADATA_FILE} records {recorded:,})")
        data = read_regular_file(file, recorded if recorded is not None else cap, what=what)
    except OSError as error:
        raise ProgramlError(f"{file}: {error.strerror or error}") from None
    if sha256_bytes(data) != entry["sha256"].lower():
        raise ProgramlError(f"{file}: damaged (its sha256 is not the one {METADATA_FILE} records)")
    return data


def pretrained(
    name: str | os.PathLike, *, directory: str | os.PathLike | None = None, device: Any = "cpu"
) -> PretrainedModel:
    """Load a pretrained model.

    Args:
        name: A shipped model's name (:func:`pretrained_names`, e.g. ``"reachability"``), or the path of a model
            directory (one with a ``model.json``).
        directory: Look names up here instead of in the package.
        device: Where to put the model (``"cpu"``, ``"cuda"`` ...).

    Returns:
        A :class:`PretrainedModel`, its network in eval mode.

    Raises:
        ProgramlError: One line: an unknown name (the known ones listed), a ``model.json`` field of the wrong type
            or out of range (:mod:`programl.pretrained.metadata`), a damaged directory (a file missing, not a
            regular file, not of the size or sha256 that ``model.json`` records), a ``model.json`` that records no
            sha256 of a file (such a model cannot be checked, so it is refused), a weights file that holds anything
            but tensors (refused, never unpickled), a vocabulary of another size than the network's, or weights that
            do not fit the model.

    >>> needs("torch_geometric")
    >>> import programl
    >>> from programl.pretrained import pretrained
    >>> graph = programl.from_llvm_ir(open("examples/dot_product.ll").read())
    >>> prediction = pretrained("reachability").predict(graph, num_roots=3)
    >>> prediction.roots.tolist(), prediction.predicted.shape
    ([4, 24, 6], (3, 38))
    >>> int(prediction.predicted[0].sum())  # nodes predicted reachable from root 4
    13
    """
    return load_model(find_model(name, directory=directory), device=device)


def load_model(info: ModelInfo, *, device: Any = "cpu") -> PretrainedModel:
    """Read the files of a model :func:`find_model` found and build its network (what :func:`pretrained` does after
    :func:`find_model`).

    Raises:
        ProgramlError: As :func:`pretrained`.
    """
    from programl.data.vocabulary import Vocabulary

    path, metadata = info.directory, info.metadata
    files = {key: _read_model_file(path, metadata, key) for key in ("weights", "vocabulary")}
    vocab_path = path / metadata["vocabulary"]["file"]
    try:
        vocabulary = Vocabulary.from_tsv(files["vocabulary"].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ProgramlError(f"{vocab_path}: not a vocabulary ({error})") from None
    entries = metadata["vocabulary"].get("entries")
    if entries is not None and len(vocabulary) != entries:
        raise ProgramlError(f"{vocab_path}: {len(vocabulary):,} texts, and {METADATA_FILE} records {entries:,}")
    for size in vocabulary_sizes(metadata["model"]):
        if size != len(vocabulary):
            raise ProgramlError(
                f"{vocab_path}: {len(vocabulary):,} texts, and the network of {METADATA_FILE} reads {size:,}"
            )
    model = build_model(metadata["model"])
    weights = path / metadata["weights"]["file"]
    state = _read_state_dict(weights, files["weights"])
    try:
        model.load_state_dict(state)
    except Exception as error:  # noqa: BLE001 - missing or extra keys, shapes: one line whatever it is
        raise ProgramlError(f"{weights}: weights that do not fit the model ({_reason(error)})") from None
    try:
        model.to(device).eval()
    except (RuntimeError, AssertionError) as error:  # torch asserts when it was built without CUDA
        raise ProgramlError(f"device {str(device)!r}: {str(error).strip().splitlines()[0][:200]}") from None
    return PretrainedModel(info.name, path, metadata, model, vocabulary, device)


def find_pretrained(task: str, *, directory: str | os.PathLike | None = None, **filters: Any) -> list[str]:
    """Names of the models in ``directory`` (default: the package's) for ``task`` whose ``model.json`` holds each
    of ``filters`` that is not None (e.g. ``analysis="reachability"``, ``platform="amd"``), sorted."""
    return list(find_pretrained_metadata(task, directory=directory, **filters))


def default_pretrained(
    task: str, *, directory: str | os.PathLike | None = None, args: Any = None, **filters: str
) -> str | None:
    """The model ``programl predict <task>`` runs when given no ``--model``, among those of ``task`` in
    ``directory`` (default: the package's) that match ``filters`` (e.g. ``analysis="reachability"``): the task's
    :meth:`~programl.tasks.base.TaskSpec.predict_default` (``args``: the command line; None: no option given), or
    None when none is installed.

    Raises:
        ProgramlError: An unknown task, or an installed ``model.json`` that :func:`read_metadata` refuses.
    """
    spec = get_task(task)
    found = find_pretrained_metadata(task, directory=directory, **filters)
    return spec.predict_default(list(found), found, args) if found else None


def find_pretrained_metadata(
    task: str, *, directory: str | os.PathLike | None = None, **filters: Any
) -> dict[str, dict[str, Any]]:
    """The models :func:`find_pretrained` finds, each name (in its order) with its checked ``model.json``: what
    :meth:`programl.tasks.base.TaskSpec.predict_default` chooses among."""
    root = Path(directory) if directory is not None else PRETRAINED_DIR
    wanted = {key: value for key, value in filters.items() if value is not None}
    out = {}
    for d in _model_dirs(root):
        metadata = read_metadata(d)
        if metadata["task"] == task and all(metadata.get(key) == value for key, value in wanted.items()):
            out[d.name] = metadata
    return out
