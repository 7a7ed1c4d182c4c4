"""What each field of a pretrained model's ``model.json`` may hold (:func:`check_metadata`), and how large each
file of a model directory may be.

A model directory may come from anyone (``programl predict --model DIR``, ``programl.pretrained.pretrained(DIR)``),
so :func:`programl.pretrained.hub.read_metadata` checks every field it reads before anything is built or read: its
type, its value and an upper limit for every number. The limits are generous for real models (the shipped ones stay
far below each) and refuse absurd values (a billion steps, a hidden size that needs terabytes) with one line that
names the file and the field, e.g. ``models/x/model.json: inference.max_steps must be at most 10,000, not
1000000000000``.

* ``format`` (1), ``name`` (letters, digits, ``.``, ``_``, ``-``), ``task`` (one of
  :data:`programl.tasks.registry.TASKS`).
* The entries only one task's models have (:attr:`TaskSpec.metadata_fields
  <programl.tasks.base.TaskSpec.metadata_fields>`): absent or null in a model of another task, and checked by the
  task's own :meth:`~programl.tasks.base.TaskSpec.check_metadata`: ``analysis`` for a ``dataflow`` model (one of
  :data:`programl.dataflow.ANALYSES`), its ``steps`` (T, at most :data:`MAX_STEPS`) and ``inference``
  (``{"mode": "until_stable", "min_steps", "max_steps", "patience", "latch"}``,
  :func:`programl.tasks.dataflow.predict.until_stable_bounds`, or ``{"mode": "control_floods", "steps", "floods":
  "exact"}``; any other mode or key is refused, not run as a fixed-step model); ``platform`` for a ``devmap`` one
  (``amd``, ``nvidia``).
* ``model``: ``{"class", "args", "kwargs"}`` (:func:`programl.models.build.build_model`); the arguments are bound
  to the class's constructor and each is checked by its name (sizes, step and layer counts, dropouts, flags), a
  nested network (``graph_model``) the same way. A ``vocabulary_size`` must be the vocabulary's ``entries``, the
  ``num_classes`` of the outer network the number of ``outputs.classes``.
* ``weights`` and ``vocabulary``: ``{"file", "sha256", "bytes"}`` (and the vocabulary's ``entries``): a file name in
  the directory, its sha256 (required), its size (written by :mod:`programl.pretrained.export`; directories exported
  before it record none for ``vocab.csv`` and are read under :data:`MAX_VOCABULARY_BYTES`).
* ``outputs``: ``level`` (the task's :attr:`~programl.tasks.base.TaskSpec.level`: ``node`` for ``dataflow``,
  ``graph`` otherwise), ``classes`` (distinct printable labels; two for a node-level model), ``meaning``.
* ``inputs``: ``flags`` (the compiler flags of the model's inputs; only optimisation levels, ``-ffast-math``,
  ``-std=``, ``-cl-std=``, ``-D``, ``-U``, ``-g`` and ``-w``: a received model does not choose what clang loads or
  writes), ``settings``, ``sources``, ``aux``, ``variant``.
* ``parameters``, and the records the card is written from (``scores``, ``compute``, ``training``,
  ``exported_with``): not read when a model is loaded; like every value of the file, numbers must be finite and
  at most :data:`MAX_NUMBER` in size, and objects nest at most :data:`MAX_DEPTH` deep.

Fields this programl does not know are not read.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from programl.exceptions import ProgramlError
from programl.tasks.base import MAX_STEPS, TaskSpec, shown
from programl.tasks.registry import TASKS
from programl.util.checks import is_integer

__all__ = [
    "FORMAT",
    "MAX_CARD_BYTES",
    "MAX_CHANNELS",
    "MAX_CLASSES",
    "MAX_DEPTH",
    "MAX_METADATA_BYTES",
    "MAX_NUMBER",
    "MAX_STEPS",
    "MAX_VOCABULARY",
    "MAX_VOCABULARY_BYTES",
    "MAX_WEIGHTS_BYTES",
    "NAME",
    "check_metadata",
    "shown",
    "vocabulary_sizes",
]

#: Version of the ``model.json`` layout this programl reads and writes (a newer one is refused).
FORMAT = 1
#: The largest ``model.json`` read (the shipped ones are under 20 KiB).
MAX_METADATA_BYTES = 16 << 20
#: The largest ``weights.pt`` read (the largest shipped is 12 MiB).
MAX_WEIGHTS_BYTES = 2 << 30
#: The largest ``vocab.csv`` read when ``model.json`` records no size (the shipped ones are under 4 KiB).
MAX_VOCABULARY_BYTES = 256 << 20
#: The largest ``MODEL_CARD.md`` read.
MAX_CARD_BYTES = 4 << 20
#: The most vocabulary entries (ProGraML's released vocabulary has 8,942).
MAX_VOCABULARY = 2_000_000
#: The most output classes (POJ-104 has 104).
MAX_CLASSES = 100_000
#: The most layers of a graph classifier (``layer_timesteps``; the paper's have 4).
MAX_LAYERS = 64
#: The widest hidden state or embedding (the shipped models use 32 to 200).
MAX_CHANNELS = 4096
#: The most operand positions a network embeds (1,024 by default).
MAX_POSITION = 65_536
#: The most bins of an auxiliary input's encoding (64 in the shipped devmap models).
MAX_BINS = 4096
#: The most edge flows or node types (3 and 4 in ProGraML graphs).
MAX_FLOWS = 16
#: The largest ``parameters`` count (a weights file of :data:`MAX_WEIGHTS_BYTES` holds about 5e8 float32 values).
MAX_PARAMETERS = 1_000_000_000
#: The largest number anywhere in the file, in size.
MAX_NUMBER = 1e15
#: The deepest nesting of objects and lists.
MAX_DEPTH = 32
#: The longest string anywhere in the file.
MAX_STRING = 100_000
#: The longest output class label.
MAX_LABEL = 200
#: A model's name (what :func:`programl.pretrained.export.export_pretrained` accepts).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
#: The compiler flags a model's ``inputs.flags`` may hold.
_FLAG = re.compile(
    r"-O[0-3sz]?|-f(no-)?fast-math|-std=[A-Za-z0-9+]{1,16}|-cl-std=CL[0-9.]{1,8}|-g0?|-w"
    r"|-[DU][A-Za-z_][A-Za-z0-9_]{0,127}(=[A-Za-z0-9_.+-]{0,128})?"
)
#: The keys of each entry whose keys are all known (any other is refused).
_KEYS = {
    "weights": ("file", "sha256", "bytes"),
    "vocabulary": ("file", "sha256", "bytes", "entries"),
    "model": ("class", "args", "kwargs"),
}
#: The largest file of each entry when ``model.json`` records no size.
_FILE_BYTES = {"weights": MAX_WEIGHTS_BYTES, "vocabulary": MAX_VOCABULARY_BYTES}

#: Integer constructor arguments of the networks, by name: the least and the most each may be.
_INTEGERS = {
    "vocabulary_size": (0, MAX_VOCABULARY),
    "num_texts": (0, MAX_VOCABULARY + 1),
    "text_counts": (0, MAX_VOCABULARY + 1),
    "num_classes": (1, MAX_CLASSES),
    "num_logits": (1, MAX_CLASSES),
    "out_channels": (1, MAX_CLASSES),
    "embedding_dim": (0, MAX_CHANNELS),  # 0: a fixed-point model whose gates read no text
    "hidden_channels": (1, MAX_CHANNELS),
    "channels": (1, MAX_CHANNELS),
    "hidden": (1, MAX_CHANNELS),
    "aux_hidden": (1, MAX_CHANNELS),
    "aux_channels": (0, MAX_CHANNELS),
    "extra_channels": (0, MAX_CHANNELS),
    "num_inputs": (1, MAX_CHANNELS),
    "num_bases": (1, MAX_CHANNELS),
    "num_steps": (0, MAX_STEPS),
    "num_flows": (1, MAX_FLOWS),
    "num_node_types": (1, MAX_FLOWS),
    "meet_flow": (0, MAX_FLOWS),
    "max_position": (1, MAX_POSITION),
    "position_pad": (0, MAX_POSITION),
    "aux_bins": (0, MAX_BINS),
    "bins": (1, MAX_BINS),
}
#: Integer list arguments, by name: (fewest items, most items, least value, most value).
_INTEGER_LISTS = {
    "layer_timesteps": (1, MAX_LAYERS, 0, MAX_STEPS),
    "layer_schedule": (1, MAX_STEPS, 0, MAX_LAYERS - 1),
}
#: Number arguments, by name (any name ending in ``dropout``: 0..1).
_NUMBERS = {"selector_value": (-1e6, 1e6), "intermediate_loss_weight": (0.0, 1e6), "gate_cost": (0.0, 1e6)}
#: An integer argument of a name this module does not know (a network added later).
_OTHER_INTEGER = (0, MAX_VOCABULARY)
#: A number argument of a name this module does not know.
_OTHER_NUMBER = (-1e6, 1e6)


class _Checker:
    """The checks of one ``model.json``: each failure is one line naming the file and the field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, field: str, problem: str) -> ProgramlError:
        return ProgramlError(f"{self.path}: {field} {problem}")

    # ------------------------------------------------------------------------------------------------ plain JSON
    def plain(self, value: Any, field: str, depth: int = 0) -> None:
        """Every value of the file: nesting, finite numbers of bounded size, strings of bounded length."""
        if depth > MAX_DEPTH:
            raise self.fail(field, f"nests more than {MAX_DEPTH} objects or lists deep")
        if isinstance(value, dict):
            for key, item in value.items():
                name = key if key.isprintable() and len(key) <= 60 else shown(key)  # the error stays one line
                self.plain(item, f"{field}.{name}" if field else name, depth + 1)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.plain(item, f"{field}[{index}]", depth + 1)
        elif isinstance(value, str):
            if len(value) > MAX_STRING:
                raise self.fail(field, f"is a string of {len(value):,} characters (at most {MAX_STRING:,})")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value) or abs(value) > MAX_NUMBER:
                raise self.fail(field, f"must be a finite number of at most {MAX_NUMBER:g} in size, not {shown(value)}")

    # ------------------------------------------------------------------------------------------------ values
    def integer(self, field: str, value: Any, low: int, high: int) -> int:
        if not is_integer(value):
            raise self.fail(field, f"must be an integer {low:,}..{high:,}, not {shown(value)}")
        if value < low:
            raise self.fail(field, f"must be at least {low:,}, not {value}")
        if value > high:
            raise self.fail(field, f"must be at most {high:,}, not {value}")
        return int(value)

    def number(self, field: str, value: Any, low: float, high: float) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise self.fail(field, f"must be a number {low:g}..{high:g}, not {shown(value)}")
        return float(value)

    def boolean(self, field: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.fail(field, f"must be true or false, not {shown(value)}")
        return value

    def text(self, field: str, value: Any, most: int = MAX_STRING, *, printable: bool = False) -> str:
        if not isinstance(value, str) or len(value) > most or (printable and not value.isprintable()):
            what = "printable " if printable else ""
            raise self.fail(field, f"must be a {what}string of at most {most:,} characters, not {shown(value)}")
        return value

    def choice(self, field: str, value: Any, choices) -> Any:
        if not isinstance(value, str) or value not in choices:
            raise self.fail(field, f"must be one of {', '.join(map(str, choices))}, not {shown(value)}")
        return value

    def mapping(self, field: str, value: Any, keys: tuple[str, ...] | None = None) -> dict:
        if not isinstance(value, dict):
            raise self.fail(field, f"must be an object, not {shown(value)}")
        unknown = [key for key in value if keys is not None and key not in keys]
        if unknown:
            raise self.fail(field, f"has an unknown key {shown(unknown[0])} (expected {', '.join(keys)})")
        return value

    def sequence(self, field: str, value: Any, fewest: int, most: int) -> list:
        if not isinstance(value, list) or not fewest <= len(value) <= most:
            raise self.fail(field, f"must be a list of {fewest:,}..{most:,} items, not {shown(value)}")
        return value

    def absent(self, metadata: Mapping[str, Any], key: str, task: str) -> None:
        if metadata.get(key) is not None:
            raise self.fail(key, f"is for another task than {task} (expected none, not {shown(metadata[key])})")


def check_metadata(metadata: Any, path: str | Path) -> dict[str, Any]:
    """Check a parsed ``model.json`` field by field (module docstring).

    Args:
        metadata: The parsed file.
        path: The file, for the errors.

    Returns:
        ``metadata``, checked.

    Raises:
        ProgramlError: One line naming the file and the first wrong field: a missing entry, a value of the wrong
            type, out of range or above its limit, an unknown inference mode, a network that does not fit its
            vocabulary or classes.
    """
    path = Path(path)
    check = _Checker(path)
    if not isinstance(metadata, dict):
        raise ProgramlError(f"{path}: not a {path.name} (expected an object)")
    check.plain(metadata, "")
    version = check.integer("format", metadata.get("format"), 1, 10**6)
    if version > FORMAT:
        raise ProgramlError(f"{path}: format {version}; this programl reads format {FORMAT} (upgrade programl)")
    missing = [key for key in ("name", "task", "model", "vocabulary", "weights", "outputs") if key not in metadata]
    if missing:
        raise ProgramlError(f"{path}: no {', '.join(missing)} entry")
    if not isinstance(metadata["name"], str) or not NAME.fullmatch(metadata["name"]):
        raise check.fail(
            "name", f"must be letters, digits, '.', '_' and '-' (not first; at most 128), not {shown(metadata['name'])}"
        )
    task = metadata["task"]
    if not isinstance(task, str) or task not in TASKS:
        raise ProgramlError(f"{path}: unknown task {shown(task)} (expected one of {', '.join(TASKS)})")
    spec = TASKS[task]
    _check_task_fields(check, metadata, spec)
    for key in ("weights", "vocabulary"):
        _check_file_entry(check, metadata, key)
    sizes = _check_network(check, "model", metadata["model"], 0)
    entries = metadata["vocabulary"].get("entries")
    for size in sizes.get("vocabulary_size", ()):
        if entries is not None and size != entries:
            raise check.fail(
                "model", f"is built for a vocabulary of {size:,} entries, and vocabulary.entries is {entries:,}"
            )
    classes = _check_outputs(check, metadata["outputs"], spec)
    for count in sizes.get("num_classes", ()):
        if count != len(classes):
            raise check.fail("model", f"has {count:,} output classes, and outputs.classes lists {len(classes):,}")
    if metadata.get("inputs") is not None:
        _check_inputs(check, metadata["inputs"])
    if metadata.get("parameters") is not None:
        check.integer("parameters", metadata["parameters"], 0, MAX_PARAMETERS)
    for key in ("scores", "compute", "training", "exported_with"):
        if metadata.get(key) is not None:
            check.mapping(key, metadata[key])
    return metadata


def _check_task_fields(check: _Checker, metadata: Mapping[str, Any], spec: TaskSpec) -> None:
    """The entries of another task's models must be absent (:attr:`~programl.tasks.base.TaskSpec.metadata_fields`);
    the task checks its own (:meth:`~programl.tasks.base.TaskSpec.check_metadata`)."""
    for other in TASKS.values():
        for key in other.metadata_fields:
            if other is not spec and key not in spec.metadata_fields:
                check.absent(metadata, key, spec.name)
    spec.check_metadata(metadata, check)


def _check_file_entry(check: _Checker, metadata: Mapping[str, Any], key: str) -> None:
    """``weights`` / ``vocabulary``: a file in the directory, its sha256 (required: an unchecked file is never
    loaded), its size and (the vocabulary's) entries."""
    entry = metadata[key]
    file = entry.get("file") if isinstance(entry, dict) else None
    if not isinstance(file, str) or not file or file != Path(file).name or file in (".", ".."):
        raise ProgramlError(
            f'{check.path}: the {key} entry must be {{"file": NAME, "sha256": ...}} naming a file in the model '
            f"directory, not {shown(entry)}"
        )
    check.mapping(key, entry, _KEYS[key])
    check.text(f"{key}.file", file, 255, printable=True)
    recorded = entry.get("sha256")
    if not isinstance(recorded, str) or not _SHA256.fullmatch(recorded):
        # a model that does not say what its files hash to cannot be checked: refused, never loaded unchecked
        raise ProgramlError(
            f"{check.path.parent / file}: {check.path.name} records no sha256 of it (got {shown(recorded)}); "
            f"refusing to load an unchecked {key} file"
        )
    if entry.get("bytes") is not None:
        check.integer(f"{key}.bytes", entry["bytes"], 0, _FILE_BYTES[key])
    if key == "vocabulary" and entry.get("entries") is not None:
        check.integer("vocabulary.entries", entry["entries"], 0, MAX_VOCABULARY)


def _check_network(check: _Checker, field: str, spec: Any, depth: int) -> dict[str, list[int]]:
    """A network's description, its arguments bound to the class's constructor and checked by name; the
    ``vocabulary_size`` and ``num_classes`` values found (in it and in the networks it nests)."""
    from programl.models.build import model_classes

    check.mapping(field, spec, _KEYS["model"])
    classes = model_classes()
    name = spec.get("class")
    if not isinstance(name, str) or name not in classes:
        raise ProgramlError(
            f"{check.path}: {field}: unknown model class {shown(name)} (expected one of {', '.join(sorted(classes))})"
        )
    args = check.sequence(f"{field}.args", spec.get("args", []), 0, 64)
    kwargs = check.mapping(f"{field}.kwargs", spec.get("kwargs", {}))
    signature = inspect.signature(classes[name])
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise check.fail(field, f"does not fit {name} ({error})") from None
    found: dict[str, list[int]] = {}
    for position, (parameter, value) in enumerate(bound.arguments.items()):
        where = f"{field}.{parameter}" if parameter in kwargs else f"{field}.args[{position}]"
        if isinstance(value, dict) and "class" in value:
            if depth >= 4:
                raise check.fail(where, "nests networks more than 4 deep")
            for key, values in _check_network(check, where, value, depth + 1).items():
                found.setdefault(key, []).extend(values)
            continue
        _check_argument(check, where, signature.parameters[parameter], value)
        if parameter == "vocabulary_size" or (parameter == "num_classes" and depth == 0):  # a nested one: channels
            found.setdefault(parameter, []).append(int(value))
    return found


def _check_argument(check: _Checker, field: str, parameter: inspect.Parameter, value: Any) -> None:
    """One constructor argument, by its name (and, for a name this module does not know, by its annotation)."""
    name, default = parameter.name, parameter.default
    annotation = str(parameter.annotation)  # a string: the models' modules use postponed annotations
    if value is None and (default is None or "None" in annotation):
        return
    if name in _INTEGERS:
        check.integer(field, value, *_INTEGERS[name])
    elif name in _INTEGER_LISTS:
        fewest, most, low, high = _INTEGER_LISTS[name]
        for index, item in enumerate(check.sequence(field, value, fewest, most)):
            check.integer(f"{field}[{index}]", item, low, high)
    elif name == "class_weight":
        for index, item in enumerate(check.sequence(field, value, 2, 2)):
            check.number(f"{field}[{index}]", item, 0.0, 1e6)
    elif name.endswith("dropout"):
        check.number(field, value, 0.0, 1.0)
    elif name in _NUMBERS:
        check.number(field, value, *_NUMBERS[name])
    elif annotation.startswith("bool") or isinstance(default, bool):
        check.boolean(field, value)
    elif annotation.startswith("str") or isinstance(default, str):
        check.text(field, value, 64)
    elif annotation.startswith("float") or isinstance(default, float):
        check.number(field, value, *_OTHER_NUMBER)
    elif annotation.startswith("int") or isinstance(default, int):
        check.integer(field, value, *_OTHER_INTEGER)
    else:
        raise check.fail(field, f"is not an argument this programl knows how to check ({shown(value)})")


def vocabulary_sizes(spec: Mapping[str, Any]) -> list[int]:
    """The ``vocabulary_size`` arguments of a checked network description and of the networks it nests (each must
    be the length of the model's vocabulary)."""
    from programl.models.build import model_classes

    bound = inspect.signature(model_classes()[spec["class"]]).bind(*spec.get("args", []), **spec.get("kwargs", {}))
    sizes = [bound.arguments["vocabulary_size"]] if "vocabulary_size" in bound.arguments else []
    for value in bound.arguments.values():
        if isinstance(value, Mapping) and "class" in value:
            sizes += vocabulary_sizes(value)
    return sizes


def _check_outputs(check: _Checker, outputs: Any, spec: TaskSpec) -> list[str]:
    """``outputs``: the level of the task, distinct printable class labels (two for a node-level model)."""
    check.mapping("outputs", outputs)
    node_level = spec.level == "node"
    check.choice("outputs.level", outputs.get("level"), ("node",) if node_level else ("graph",))
    fewest, most = (2, 2) if node_level else (2, MAX_CLASSES)
    classes = check.sequence("outputs.classes", outputs.get("classes"), fewest, most)
    for index, label in enumerate(classes):
        check.text(f"outputs.classes[{index}]", label, MAX_LABEL, printable=True)
        if not label:
            raise check.fail(f"outputs.classes[{index}]", "must not be empty")
    if len(set(classes)) != len(classes):
        raise check.fail("outputs.classes", "lists a class twice")
    if outputs.get("meaning") is not None:
        check.text("outputs.meaning", outputs["meaning"])
    return classes


def _check_inputs(check: _Checker, inputs: Any) -> None:
    """``inputs``: the compiler flags (an allow-list: a received model must not choose what clang loads or writes),
    the optimisation settings, and the texts that describe them."""
    check.mapping("inputs", inputs)
    for index, flag in enumerate(check.sequence("inputs.flags", inputs.get("flags", []), 0, 64)):
        if not isinstance(flag, str) or not _FLAG.fullmatch(flag):
            raise check.fail(
                f"inputs.flags[{index}]",
                f"{shown(flag)} is not a flag a model may set (only -O0..-O3, -Os, -Oz, -ffast-math, -std=, "
                "-cl-std=, -D, -U, -g, -w)",
            )
    for index, setting in enumerate(check.sequence("inputs.settings", inputs.get("settings", []), 0, 64)):
        check.integer(f"inputs.settings[{index}]", setting, 0, 63)
    for index, name in enumerate(check.sequence("inputs.aux", inputs.get("aux", []), 0, 64)):
        check.text(f"inputs.aux[{index}]", name, 64, printable=True)
    for key in ("sources", "variant"):
        if inputs.get(key) is not None:
            check.text(f"inputs.{key}", inputs[key])
