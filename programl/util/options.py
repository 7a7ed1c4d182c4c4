"""Options declared once, as the fields of a frozen dataclass (docs/spec/design.md#command-line).

Each field is made by :func:`option`, which carries the default, the help text, the argument group and the allowed
range. From that one declaration come

* the ``argparse`` options (:func:`add_options`: the flag is the field's name with dashes; the type, the number of
  values and the ``(default: ...)`` of the help come from the field),
* a dictionary of the values (:meth:`Options.config`; a training run's ``config.json`` keeps it as its ``model``
  entry, and ``--config`` reads it back through the same parser),
* the range check (:meth:`Options.check`: one line naming the option; the CLI exits 2),
* the defaults (:meth:`Options.defaults`: what a run written before an option existed is taken to have used),
* the options a saved run recorded, read back and checked (:meth:`Options.from_config`).

A plain field (no :func:`option`) is recorded too but declared elsewhere as an option (``--seed`` and ``--epochs``
are run options, :mod:`programl.tasks.run_options`, that a task's model options record as well). This is
HuggingFace's ``HfArgumentParser`` idea (an option declared once, as a dataclass field) in argparse's vocabulary.
Importing this module imports neither torch nor numpy.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from programl.exceptions import ProgramlError, UsageError

__all__ = ["Options", "add_options", "option"]


def option(
    default: Any = dataclasses.MISSING,
    *,
    help: str,  # noqa: A002 - argparse's word
    group: str | None = None,
    metavar: str | None = None,
    choices: tuple[Any, ...] | None = None,
    low: float | None = None,
    high: float | None = None,
    range_text: str | None = None,
    default_text: str | None = None,
    short: str | None = None,
    type: Callable[[str], Any] | None = None,  # noqa: A002 - argparse's word
    action: Callable[..., argparse.Action] | None = None,
    required: bool = False,
) -> Any:
    """A dataclass field that is a command-line option.

    Args:
        default: The value when the option is not given (a list is copied per instance). ``None`` with a type
            ``X | None``: the option is off unless given. None given (``required``): the option must be given.
        help: What the option does, without its default (:func:`add_options` appends ``(default: ...)``).
        group: The title of its argument group in ``--help`` (None: the parser's own options).
        metavar: The value's name in ``--help`` (default: ``N`` for an integer, ``X`` for a number, the upper-case
            name for text).
        choices: The values it takes.
        low, high: The range its value must lie in (inclusive; either may be None), checked by
            :meth:`Options.check`; ``range_text`` says it in words (default: ``in [low, high]``, ``>= low``).
        default_text: How ``--help`` shows the default when its value alone would not say it (``2.5e-4``, "the
            paper's 10k, 20k, ..."); ``""``: not at all (``help`` says it).
        short: A one-letter alias (``-j``).
        type: What turns the text into the value, where the field's type does not (``stable`` or a number).
        action: An ``argparse`` action instead of storing the value (``--config FILE`` reads a file).
        required: The command line must give it.
    """
    metadata = {
        "help": help,
        "group": group,
        "metavar": metavar,
        "choices": choices,
        "low": low,
        "high": high,
        "range_text": range_text,
        "default_text": default_text,
        "short": short,
        "type": type,
        "action": action,
        "required": required,
    }
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata={"option": metadata})
    return dataclasses.field(default=default, metadata={"option": metadata})


def _shape(hint: Any) -> tuple[type, bool, bool]:
    """(the value type, whether it is a list, whether None is allowed) of a field's type hint."""
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        (hint,) = args
    if typing.get_origin(hint) in (list, tuple):
        return typing.get_args(hint)[0], True, optional
    return hint, False, optional


def _show(value: Any) -> str:
    """A default as ``--help`` shows it: ``10,000``, ``0.2``, ``2 2 2 2``."""
    if isinstance(value, (list, tuple)):
        return " ".join(_show(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _range_text(meta: dict[str, Any]) -> str | None:
    if meta["range_text"]:
        return meta["range_text"]
    low, high = meta["low"], meta["high"]
    if low is not None and high is not None:
        return f"in [{_show(low)}, {_show(high)}]"
    if low is not None:
        return "positive" if low in (1, math.ulp(0.0)) else f">= {_show(low)}"
    if high is not None:
        return f"<= {_show(high)}"
    return None


def add_options(
    parser: argparse.ArgumentParser,
    options: type[Options],
    *,
    only: tuple[str, ...] | None = None,
    exclude: tuple[str, ...] = (),
    overrides: str | None = None,
    groups: dict[str, argparse._ArgumentGroup] | None = None,
) -> dict[str, argparse._ArgumentGroup]:
    """Add the options of ``options`` (its :func:`option` fields; ``only`` these, none of ``exclude``) to ``parser``.

    An excluded option keeps its default in the parsed arguments (``parser.set_defaults``), so the dataclass still
    reads it, and ``--config`` may only repeat that default. ``overrides``: the options replace a saved run's
    (``programl evaluate``): their default is None and ``--help`` says ``(default: the run's, else <default>)``
    with ``overrides`` = "the run's". ``groups``: argument groups by title, to add to (created as needed, in the
    order of first use). Returns the groups by title, so that a task can add its other options beside these.
    """
    groups = {} if groups is None else groups
    hints = typing.get_type_hints(options)
    used = {
        field.metadata["option"]["group"]
        for field in dataclasses.fields(options)
        if "option" in field.metadata and (only is None or field.name in only) and field.name not in exclude
    }
    for title in options.GROUPS:  # the declared order first
        if title in used and title not in groups:
            groups[title] = parser.add_argument_group(title)
    for field in dataclasses.fields(options):
        meta = field.metadata.get("option")
        if meta is None or (only is not None and field.name not in only):
            continue
        default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
        default = None if default is dataclasses.MISSING else default  # a required option
        if field.name in exclude:
            parser.set_defaults(**{field.name: default})
            continue
        value_type, many, _ = _shape(hints[field.name])
        target: Any = parser
        if meta["group"]:
            if meta["group"] not in groups:
                groups[meta["group"]] = parser.add_argument_group(meta["group"])
            target = groups[meta["group"]]
        flags = [f"--{field.name.replace('_', '-')}"]
        if meta["short"]:
            flags.insert(0, meta["short"])
        shown = meta["default_text"]
        if shown is None:
            shown = "" if default is None else _show(default)
        if overrides:
            shown = f"{overrides}, else {shown}" if shown else overrides
        default_help = f"(default: {shown})" if shown and value_type is not bool else ""
        help_text = " ".join(text for text in (meta["help"], default_help) if text)
        kwargs: dict[str, Any] = {"dest": field.name, "help": help_text}
        if meta["required"]:
            kwargs["required"] = True
        if meta["action"] is not None:
            kwargs.update(action=meta["action"], default=default, metavar=meta["metavar"])
        elif value_type is bool:
            kwargs["action"] = "store_true"
            kwargs["default"] = None if overrides else default
        else:
            kwargs["default"] = None if overrides else default
            if meta["type"] is not None:
                kwargs["type"] = meta["type"]
            elif value_type is not str:
                kwargs["type"] = value_type
            if many:
                kwargs["nargs"] = "+"
            if meta["choices"] is not None:
                kwargs["choices"] = meta["choices"]
            metavar = meta["metavar"] or {int: "N", float: "X"}.get(value_type)
            if metavar and meta["choices"] is None:
                kwargs["metavar"] = metavar
        target.add_argument(*flags, **kwargs)
    return groups


def _saved_value(where: object, field: dataclasses.Field, hint: Any, value: Any) -> Any:
    """``value`` of a saved run's option ``field`` (type ``hint``) as the dataclass holds it (a list copied, an integer
    of a float option as a float), or one line naming ``where`` when it is not of the option's type or choices."""
    value_type, many, optional = _shape(hint)
    choices = (field.metadata.get("option") or {}).get("choices")
    if value is None and optional:
        return None
    if many != isinstance(value, list):
        raise ProgramlError(f"{where}: {field.name} = {value!r} is {'not a list' if many else 'a list'}")
    out = []
    for item in value if many else [value]:
        if value_type is float and isinstance(item, int) and not isinstance(item, bool):
            item = float(item)
        simple = value_type in (bool, int, float, str)
        if (simple and type(item) is not value_type) or (choices is not None and item not in choices):
            raise ProgramlError(f"{where}: {field.name} = {value!r} is not a value of this option")
        out.append(item)
    return out if many else out[0]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Options:
    """Options as fields (:func:`option`); a subclass declares them. Frozen: a run's options do not change once
    read, and ``config()`` is what the run used."""

    #: Where ``--help`` lists the option groups (titles; groups not named here follow in order of first use).
    GROUPS: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        self.check()

    @classmethod
    def from_args(cls, args: argparse.Namespace):
        """The options of ``args`` (lists copied, so that the dataclass owns its values).

        Raises:
            UsageError: A value out of its range (:meth:`check`).
        """
        values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)}
        return cls(**{k: list(v) if isinstance(v, (list, tuple)) else v for k, v in values.items()})

    @classmethod
    def from_config(cls, values: Mapping[str, Any], where: object):
        """The options a saved run recorded: ``values`` is what :meth:`config` gave (a run's ``config.json`` ``model``
        entry, read back). An option it lacks takes its default (the run was written before the option existed); an
        entry that is no option is left out.

        Raises:
            ProgramlError: One line naming ``where`` (the file): an option without a default is missing, or a value
                is not of its option's type, not one of its choices, or out of its range.
        """
        hints = typing.get_type_hints(cls)
        out: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            if field.name not in values:
                if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                    raise ProgramlError(f"{where}: no {field.name} among the options")
                continue
            out[field.name] = _saved_value(where, field, hints[field.name], values[field.name])
        try:
            return cls(**out)
        except UsageError as error:  # out of range: the file's fault, not the command line's
            raise ProgramlError(f"{where}: {error}") from None

    @classmethod
    def defaults(cls, *names: str) -> dict[str, Any]:
        """The defaults of the options ``names`` (all that have one when none are named): what a run written before
        an option existed is taken to have used."""
        out = {}
        for field in dataclasses.fields(cls):
            if names and field.name not in names:
                continue
            if field.default_factory is not dataclasses.MISSING:
                out[field.name] = field.default_factory()
            elif field.default is not dataclasses.MISSING:
                out[field.name] = field.default
        return out

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The names of the options, in declaration order (the keys of :meth:`config`)."""
        return tuple(field.name for field in dataclasses.fields(cls))

    def check(self) -> None:
        """Refuse a number outside its option's range, or one that is not finite (docs/spec/design.md#conventions: a
        wrong option exits 2).

        Raises:
            UsageError: One line naming the option as on the command line.
        """
        for field in dataclasses.fields(self):
            meta = field.metadata.get("option")
            value = getattr(self, field.name)
            flag = "--" + field.name.replace("_", "-")
            low, high = (meta["low"], meta["high"]) if meta else (None, None)
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(item, bool) or not isinstance(item, (int, float)):
                    continue
                if isinstance(item, float) and not math.isfinite(item):
                    raise UsageError(f"{flag} must be a finite number, not {item}")
                if (low is not None and item < low) or (high is not None and item > high):
                    raise UsageError(f"{flag} must be {_range_text(meta)}, not {item:g}")

    def config(self) -> dict[str, Any]:
        """The values by name (a training run's ``config.json`` keeps them as its ``model`` entry)."""
        return dataclasses.asdict(self)
