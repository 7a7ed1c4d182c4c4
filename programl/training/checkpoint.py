"""Checkpoints and result files (docs/spec/tasks.md#schedule: a checkpoint per epoch, test with the best):
:func:`save_checkpoint` (atomic: model, optimizer, epoch, best metric, RNG states, anything else),
:func:`load_checkpoint` (resumption; a damaged or foreign file is one line), :func:`load_initial_weights` (the
weights a new run starts from: a run's checkpoint or an exported model, vocabularies compared),
:func:`write_json` (atomic, indented, sorted keys; :func:`programl.util.fs.write_json`, importable from here too) and
:func:`unwrap` (the model inside DDP)."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from programl.data.vocabulary import Vocabulary
from programl.exceptions import ProgramlError
from programl.training.runtime import rng_state, set_rng_state
from programl.util.fs import write_bytes, write_json
from programl.util.safe_torch import load_tensors

__all__ = ["load_checkpoint", "load_initial_weights", "save_checkpoint", "unwrap", "write_json"]


def unwrap(model):
    """The module inside a ``DistributedDataParallel`` wrapper (or the model itself)."""
    return getattr(model, "module", model)


def save_checkpoint(
    path: str | os.PathLike,
    *,
    model,
    optimizer=None,
    epoch: int,
    best_metric: float | None = None,
    best_epoch: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write a checkpoint atomically (a crash never leaves a half-written file).

    Holds the model's ``state_dict`` (unwrapped from DDP), the optimizer's, ``epoch`` (the last finished epoch),
    the best validation metric so far and its epoch, the RNG states (:func:`rng_state`) and ``extra``. Everything
    in it must be a tensor or a plain value (a container of str, int, float, bool, None): the file is read back with
    ``weights_only=True`` (docs/security.md), so an object put into ``extra`` is refused when the checkpoint is
    read, and refused here first.
    """
    import torch

    payload = {
        "model": unwrap(model).state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "epoch": epoch,
        "best_metric": best_metric,
        "best_epoch": best_epoch,
        "rng": rng_state(),
        "extra": dict(extra or {}),
    }
    _check_plain(payload, "checkpoint")
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return write_bytes(path, buffer.getvalue())


_PLAIN = (str, int, float, bool, type(None))


def _check_plain(value: Any, where: str) -> None:
    """Refuse (``TypeError``) anything in a checkpoint but tensors, plain values and containers of them: what
    ``weights_only=True`` reads back. A programming error, caught when the checkpoint is written, not when a later
    session cannot resume from it."""
    import torch

    if isinstance(value, (torch.Tensor, *_PLAIN)):
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, (str, int)):
                raise TypeError(f"{where}: a key of type {type(key).__name__} (only str and int keys are read back)")
            _check_plain(item, f"{where}[{key!r}]")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]")
        return
    raise TypeError(
        f"{where}: a {type(value).__name__} (a checkpoint holds only tensors and plain values, read back with "
        "weights_only=True; give the object a state_dict())"
    )


def load_checkpoint(
    path: str | os.PathLike,
    *,
    model=None,
    optimizer=None,
    map_location: Any = "cpu",
    restore_rng: bool = True,
    missing_hint: str = "train first, or choose another --checkpoint",
    mismatch_hint: str = "use another --run-dir, or --restart",
    missing_ok: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` into ``model`` / ``optimizer`` (when given).

    ``missing_hint`` and ``mismatch_hint`` are the advice of the errors for a missing file and for a checkpoint of
    another model: what the caller's user can do about it. ``missing_ok``: prefixes of ``model`` parameters that the
    checkpoint may lack (they keep their initial values); any other missing, unexpected or misshapen entry is an
    error.

    Returns:
        The checkpoint's dictionary (``epoch``, ``best_metric``, ``best_epoch``, ``extra`` ...).

    Raises:
        ProgramlError: The file is missing, is not a readable checkpoint, or holds a model of other options (one
            line each; the file is not changed).
    """
    path = Path(path)
    payload = _read(path, map_location, missing_hint)
    if (
        not isinstance(payload, dict)
        or not isinstance(payload.get("model"), Mapping)
        or not isinstance(payload.get("epoch"), int)
        or not isinstance(payload.get("extra", {}), Mapping)
    ):
        raise ProgramlError(f"{path}: not a programl checkpoint")
    payload.setdefault("extra", {})
    with _of_another_model(path, mismatch_hint):
        if model is not None:
            _load_model_state(unwrap(model), payload["model"], missing_ok)
        if optimizer is not None and payload.get("optimizer") is not None:
            optimizer.load_state_dict(payload["optimizer"])
        if restore_rng and payload.get("rng"):
            set_rng_state(payload["rng"])
    return payload


@contextmanager
def _of_another_model(path: Path, hint: str) -> Iterator[None]:
    """Turn what loading another model's (or optimizer's) state raises into one line naming ``path`` and ``hint``."""
    try:
        yield
    except (RuntimeError, KeyError, ValueError, TypeError, IndexError) as error:
        raise ProgramlError(
            f"{path}: a checkpoint of another model or options ({_first_sentence(error)}); {hint}"
        ) from None


def _read(path: Path, map_location: Any, missing_hint: str) -> Any:
    """A checkpoint's contents, read without running code (:func:`~programl.util.safe_torch.load_tensors`:
    tensors and plain values only; a checkpoint may have been received); its absence or damage is one line."""
    if not path.is_file():
        raise ProgramlError(f"{path}: no checkpoint ({missing_hint})")
    return load_tensors(path, map_location=map_location, what="checkpoint")


#: What ``--init-from`` reads (the advice of its errors).
INIT_FROM_HINT = "--init-from needs a run's best.pt or last.pt, an exported model's weights.pt, or its directory"


def load_initial_weights(
    path: str | os.PathLike,
    *,
    model,
    map_location: Any = "cpu",
    missing_ok: tuple[str, ...] = (),
    vocabulary=None,
) -> Path:
    """Load the weights a new run starts from (``--init-from``: fine-tuning, or going on with another schedule)
    into ``model``; the optimizer and RNG states are not read.

    ``path`` is a checkpoint of a run (``best.pt``, ``last.pt``: :func:`save_checkpoint`), an exported model's
    ``weights.pt`` (a bare ``state_dict``: :mod:`programl.pretrained.export`), or a directory holding either
    (``weights.pt`` first, e.g. ``programl/pretrained/weights/classifyapp``; else ``best.pt``). When ``vocabulary`` (the
    new run's :class:`~programl.data.vocabulary.Vocabulary`) is given and a ``vocab.csv`` lies beside the weights,
    both must list the same texts in the same order: row ``i`` of the embedding means the text of id ``i``, so
    weights read with another vocabulary would see other texts than they learned, with no error of shape.

    Returns:
        The weights file read.

    Raises:
        ProgramlError: The file is missing, damaged, not weights, of another model, or its vocabulary differs (one
            line each; a vocabulary is compared before any weight is loaded).
    """
    path = Path(path)
    if path.is_dir():
        found = [path / name for name in ("weights.pt", "best.pt") if (path / name).is_file()]
        if not found:
            raise ProgramlError(f"{path}: no weights.pt or best.pt in this directory ({INIT_FROM_HINT})")
        path = found[0]
    payload = _read(path, map_location, INIT_FROM_HINT)
    if isinstance(payload, Mapping) and isinstance(payload.get("model"), Mapping):
        state = payload["model"]  # a run's checkpoint
    elif isinstance(payload, Mapping) and payload and all(hasattr(v, "shape") for v in payload.values()):
        state = payload  # an exported model's state_dict
    else:
        raise ProgramlError(f"{path}: neither a programl checkpoint nor a model's weights ({INIT_FROM_HINT})")
    if vocabulary is not None and (path.parent / "vocab.csv").is_file():
        _check_same_vocabulary(path.parent / "vocab.csv", vocabulary)
    with _of_another_model(path, "--init-from needs weights of the same model options and vocabulary"):
        _load_model_state(unwrap(model), state, missing_ok)
    return path


def _check_same_vocabulary(path: Path, vocabulary) -> None:
    """Refuse weights whose ``vocab.csv`` (``path``) lists other texts, or the same in another order, than
    ``vocabulary``."""
    try:
        theirs = Vocabulary.load(path).texts
    except (UnicodeDecodeError, ValueError) as error:
        raise ProgramlError(f"{path}: not a vocabulary ({error})") from None
    ours = tuple(vocabulary.texts)
    if theirs == ours:
        return
    at = next((i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b), min(len(theirs), len(ours)))
    first = (
        f"id {at} is {theirs[at]!r} there and {ours[at]!r} here"
        if at < min(len(theirs), len(ours))
        else "one is a prefix of the other"
    )
    raise ProgramlError(
        f"{path}: the vocabulary of the --init-from weights ({len(theirs)} texts) differs from this run's "
        f"({len(ours)} texts; {first}); an embedding row means the text of its id, so start from weights trained "
        "on the same vocabulary"
    )


def _load_model_state(model, state: Mapping[str, Any], missing_ok: tuple[str, ...]) -> None:
    """``model.load_state_dict(state)``, strict except for missing keys under the ``missing_ok`` prefixes; a model
    with ``init_from_missing(keys)`` is then told which keys the weights lacked (e.g. to start them at zero)."""
    if not missing_ok:
        model.load_state_dict(state)
        return
    result = model.load_state_dict(state, strict=False)
    missing = [k for k in result.missing_keys if not k.startswith(missing_ok)]
    if missing or result.unexpected_keys:
        keys = ", ".join((missing + list(result.unexpected_keys))[:3])
        raise KeyError(f"missing or unexpected parameters: {keys}")
    start = getattr(model, "init_from_missing", None)  # a model's say in how its parts the weights lack begin
    if result.missing_keys and start is not None:
        start(list(result.missing_keys))


def _first_sentence(error: BaseException) -> str:
    """The first line of an error message, cut at its first sentence (torch's messages run on)."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    head, dot, _ = text.partition(". ")
    return (head + dot).strip()[:200]
