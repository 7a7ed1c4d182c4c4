"""Pretrained models shipped inside the package: the on-disk format, listing and loading (issue 11 item 6; the
models of SPEC §6.1, §6.5, §6.6).

A pretrained model is a directory ``programl/models/weights/<name>/`` (or any directory of the same form) holding

* ``weights.pt`` - the model's ``state_dict`` only, read with ``torch.load(..., weights_only=True)`` (a file that
  holds anything else is refused, never unpickled);
* ``vocab.csv`` - the node-text vocabulary the model was trained with (:mod:`programl.data.vocabulary` format);
* ``model.json`` - what the model is and how to use it: ``format`` (:data:`FORMAT`), ``name``, ``task``
  (``dataflow``, ``devmap`` or ``classifyapp``) with ``analysis`` / ``platform`` where they apply, ``model`` (the
  :mod:`programl.models` class and its constructor arguments, see :func:`build_model`), ``vocabulary`` and
  ``weights`` (file names and sha256, both required: a file is checked before it is read, and a model whose
  ``model.json`` records no sha256 is refused), ``steps`` (message-passing steps of a data-flow model), ``outputs`` (the
  meaning of the output classes, e.g. ``["CPU", "GPU"]`` for devmap), ``inputs`` (how source files are compiled for
  it), ``scores`` (copied from the run's ``result.json``) and ``training`` (the run directory, its ``config.json``,
  the command and commit that trained it where known);
* ``MODEL_CARD.md`` - data, protocol, scores, compute, limitations, for people.

:func:`programl.pretrained.export.export_pretrained` makes such a directory from a finished run (``programl
export-pretrained``); :func:`pretrained` loads one and :func:`pretrained_names` lists those shipped.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from programl.exceptions import ProgramlError
from programl.models.build import build_model, model_classes
from programl.tasks.registry import TASKS as _REGISTRY
from programl.util.fs import read_json
from programl.util.safe_torch import load_tensors

__all__ = [
    "FORMAT",
    "PRETRAINED_DIR",
    "TASKS",
    "PretrainedModel",
    "build_model",
    "find_pretrained",
    "find_pretrained_metadata",
    "model_classes",
    "pretrained",
    "pretrained_names",
    "read_metadata",
]

#: Version of the ``model.json`` layout this module reads and writes.
FORMAT = 1
#: Where the shipped models live (one subdirectory per model).
PRETRAINED_DIR = Path(__file__).resolve().parents[1] / "models" / "weights"
#: The tasks a pretrained model can be for (:data:`programl.tasks.registry.TASKS`).
TASKS = tuple(_REGISTRY)
METADATA_FILE = "model.json"
CARD_FILE = "MODEL_CARD.md"
#: A sha256 as ``model.json`` records it (hex).
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def sha256_bytes(data: bytes) -> str:
    """The hex sha256 of ``data`` (what ``model.json`` records of each file)."""
    return hashlib.sha256(data).hexdigest()


def read_metadata(directory: str | os.PathLike) -> dict[str, Any]:
    """The checked ``model.json`` of a pretrained-model directory.

    Raises:
        ProgramlError: One line: no ``model.json``, not JSON, a newer format, an entry missing, or a ``weights`` /
            ``vocabulary`` entry that does not name a file inside the directory.
    """
    path = Path(directory) / METADATA_FILE
    if not path.exists():
        raise ProgramlError(f"{directory}: not a pretrained model (no {METADATA_FILE})")
    metadata = read_json(path)
    if not isinstance(metadata, dict):
        raise ProgramlError(f"{path}: not a {METADATA_FILE} (expected an object)")
    version = metadata.get("format")
    if not isinstance(version, int) or version > FORMAT:
        raise ProgramlError(f"{path}: format {version!r}; this programl reads format {FORMAT} (upgrade programl)")
    missing = [key for key in ("name", "task", "model", "vocabulary", "weights", "outputs") if key not in metadata]
    if missing:
        raise ProgramlError(f"{path}: no {', '.join(missing)} entry")
    if metadata["task"] not in TASKS:
        raise ProgramlError(f"{path}: unknown task {metadata['task']!r} (expected one of {', '.join(TASKS)})")
    for key in ("weights", "vocabulary"):
        entry = metadata[key]
        file = entry.get("file") if isinstance(entry, dict) else None
        if not isinstance(file, str) or not file or file != Path(file).name or file in (".", ".."):
            raise ProgramlError(
                f'{path}: the {key} entry must be {{"file": NAME, "sha256": ...}} naming a file in the model '
                f"directory, not {entry!r}"
            )
    return metadata


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
        if not Path(text, METADATA_FILE).is_file():
            raise ProgramlError(f"{text}: not a pretrained model (no {METADATA_FILE})")
        return Path(text)
    root = Path(directory) if directory is not None else PRETRAINED_DIR
    candidate = root / text
    if (candidate / METADATA_FILE).is_file():
        return candidate
    known = pretrained_names(root)
    where = "in this package" if directory is None else f"in {root}"
    listing = f"known: {', '.join(known)}" if known else f"none are installed {where} yet (programl export-pretrained)"
    raise ProgramlError(f"unknown pretrained model {text!r}; {listing}")


@dataclass
class PretrainedModel:
    """A loaded pretrained model: the network in eval mode, its vocabulary and its metadata.

    Attributes:
        name: The model's name (its directory's).
        directory: Where it was loaded from.
        metadata: The contents of ``model.json`` (module docstring).
        model: The ``torch.nn.Module``, in eval mode, on ``device``.
        vocabulary: The :class:`~programl.data.vocabulary.Vocabulary` of its inputs.
    """

    name: str
    directory: Path
    metadata: dict[str, Any]
    model: Any
    vocabulary: Any
    device: Any = field(default="cpu")

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
        """The text of ``MODEL_CARD.md`` ("" when there is none)."""
        path = self.directory / CARD_FILE
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def predict(self, graph, **options):
        """Predict on a ``ProgramGraph``: the task's :meth:`~programl.tasks.base.TaskSpec.predict` (e.g.
        :func:`~programl.pretrained.inference.predict_dataflow`, :func:`~programl.pretrained.inference.predict_devmap`
        or :func:`~programl.pretrained.inference.predict_classifyapp`; ``options`` go to that function)."""
        return _REGISTRY[self.task].predict(self, graph, **options)


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
        ProgramlError: One line: an unknown name (the known ones listed), a damaged directory (a file missing, or
            not matching its sha256 in ``model.json``), a ``model.json`` that records no sha256 of a file (such a
            model cannot be checked, so it is refused), a weights file that holds anything but tensors (refused,
            never unpickled), or weights that do not fit the model.

    >>> from programl.models import pretrained
    >>> reachability = pretrained("reachability")                               # doctest: +SKIP
    >>> reachability.predict(graph, num_roots=3)                                # doctest: +SKIP
    """
    from programl.data.vocabulary import Vocabulary

    path = _resolve(name, directory)
    metadata = read_metadata(path)
    files = {}
    for key in ("weights", "vocabulary"):
        entry = metadata[key]
        file = path / entry["file"]
        try:
            files[key] = file.read_bytes()
        except OSError as error:
            raise ProgramlError(f"{file}: {error.strerror or error}") from None
        recorded = entry.get("sha256")
        if not isinstance(recorded, str) or not _SHA256.fullmatch(recorded):
            # a model that does not say what its files hash to cannot be checked: refused, never loaded unchecked
            raise ProgramlError(
                f"{file}: {METADATA_FILE} records no sha256 of it (got {recorded!r}); refusing to load an unchecked "
                f"{key} file"
            )
        if sha256_bytes(files[key]) != recorded.lower():
            raise ProgramlError(f"{file}: damaged (its sha256 is not the one {METADATA_FILE} records)")
    try:
        vocabulary = Vocabulary.from_tsv(files["vocabulary"].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ProgramlError(f"{path / metadata['vocabulary']['file']}: not a vocabulary ({error})") from None
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
    return PretrainedModel(path.name, path, metadata, model, vocabulary, device)


def find_pretrained(
    task: str,
    *,
    analysis: str | None = None,
    platform: str | None = None,
    directory: str | os.PathLike | None = None,
) -> list[str]:
    """Names of the models in ``directory`` (default: the package's) for ``task`` (and ``analysis`` / ``platform``
    when given), sorted."""
    return list(find_pretrained_metadata(task, analysis=analysis, platform=platform, directory=directory))


def find_pretrained_metadata(
    task: str,
    *,
    analysis: str | None = None,
    platform: str | None = None,
    directory: str | os.PathLike | None = None,
) -> dict[str, dict[str, Any]]:
    """The models :func:`find_pretrained` finds, each name (in its order) with its checked ``model.json``: what
    :meth:`programl.tasks.base.TaskSpec.predict_default` chooses among."""
    root = Path(directory) if directory is not None else PRETRAINED_DIR
    out = {}
    for d in _model_dirs(root):
        metadata = read_metadata(d)
        if metadata["task"] != task:
            continue
        if analysis is not None and metadata.get("analysis") != analysis:
            continue
        if platform is not None and metadata.get("platform") != platform:
            continue
        out[d.name] = metadata
    return out
