"""programl.util.options (issue 35 item 2): an option declared once, as a dataclass field, gives the argparse option,
its help with the default, its range check and the values config.json keeps."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from programl.exceptions import ProgramlError, UsageError
from programl.util.options import Options, add_options, option


@dataclasses.dataclass(frozen=True, kw_only=True)
class Toy(Options):
    GROUPS = ("model",)

    hidden: int = option(32, group="model", low=1, help="hidden units")
    dropout: float = option(0.0, group="model", low=0.0, high=0.5, help="dropout")
    sizes: list[int] = option([10_000, 20_000], group="data", low=1, help="sizes")
    kind: str = option("a", choices=("a", "b"), help="the kind")
    clip: float | None = option(None, low=1e-9, help="clip", default_text="no clipping")
    verbose: bool = option(False, help="say more")
    seed: int


def parse(argv: list[str], **kwargs) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_options(parser, Toy, **kwargs)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def test_the_parser_comes_from_the_fields() -> None:
    parser = argparse.ArgumentParser()
    groups = add_options(parser, Toy)
    assert list(groups) == ["model", "data"]  # declared order first
    text = parser.format_help()
    assert "hidden units (default: 32)" in text and "sizes (default: 10,000 20,000)" in text
    assert "clip (default: no clipping)" in text and "--verbose" in text and "{a,b}" in text
    args = parse(["--hidden", "8", "--sizes", "1", "2", "--kind", "b", "--verbose"])
    options = Toy.from_args(args)
    assert (options.hidden, options.sizes, options.kind, options.verbose, options.clip) == (8, [1, 2], "b", True, None)
    assert options.config() == {
        "hidden": 8, "dropout": 0.0, "sizes": [1, 2], "kind": "b", "clip": None, "verbose": True, "seed": 0,
    }  # fmt: skip
    assert Toy.keys() == ("hidden", "dropout", "sizes", "kind", "clip", "verbose", "seed")
    assert Toy.defaults("hidden", "sizes") == {"hidden": 32, "sizes": [10_000, 20_000]}


def test_a_value_out_of_range_is_one_line_naming_the_flag() -> None:
    with pytest.raises(UsageError, match=r"^--hidden must be positive, not 0$"):
        Toy.from_args(parse(["--hidden", "0"]))
    with pytest.raises(UsageError, match=r"^--dropout must be in \[0, 0.5\], not 0.7$"):
        Toy.from_args(parse(["--dropout", "0.7"]))
    with pytest.raises(UsageError, match=r"^--sizes must be positive, not -3$"):
        Toy.from_args(parse(["--sizes", "5", "-3"]))
    with pytest.raises(UsageError, match=r"^--dropout must be a finite number, not nan$"):
        Toy.from_args(parse(["--dropout", "nan"]))
    with pytest.raises(UsageError, match=r"^--clip must be >= 1e-09, not 0$"):
        Toy(seed=0, clip=0.0)


def test_excluded_options_keep_their_default_and_overrides_default_to_none() -> None:
    args = parse([], exclude=("hidden",))
    assert args.hidden == 32 and Toy.from_args(args).hidden == 32
    parser = argparse.ArgumentParser()
    add_options(parser, Toy, only=("dropout",), overrides="the run's")
    assert parser.parse_args([]).dropout is None
    assert "(default: the run's, else 0)" in parser.format_help()
    with pytest.raises(SystemExit):
        parser.parse_args(["--hidden", "3"])  # not among `only`


def test_options_are_frozen_and_own_their_lists() -> None:
    args = parse(["--sizes", "1", "2"])
    options = Toy.from_args(args)
    args.sizes.append(3)
    assert options.sizes == [1, 2]
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.hidden = 4  # type: ignore[misc]


def test_a_saved_runs_options_are_read_back_checked() -> None:
    """:meth:`Options.from_config`: what :meth:`Options.config` gave comes back equal; an option the file lacks takes
    its default (a run written before it existed), an entry that is no option is left out, and a value of the wrong
    type, choice or range is one line naming the file, never a traceback nor a silently other run."""
    saved = Toy(seed=3, hidden=8, sizes=[1, 2], clip=0.5)
    assert Toy.from_config(saved.config(), "config.json") == saved
    assert Toy.from_config({"seed": 3, "dropout": 0, "retired": 1}, "config.json") == Toy(seed=3)
    assert isinstance(Toy.from_config({"seed": 3, "dropout": 0}, "f").dropout, float)
    for values, reason in [
        ({}, "no seed among the options"),
        ({"seed": 3, "hidden": "8"}, "hidden = '8' is not a value of this option"),
        ({"seed": 3, "hidden": True}, "hidden = True is not a value of this option"),
        ({"seed": 3, "verbose": 1}, "verbose = 1 is not a value of this option"),
        ({"seed": 3, "kind": "c"}, "kind = 'c' is not a value of this option"),
        ({"seed": 3, "sizes": 5}, "sizes = 5 is not a list"),
        ({"seed": 3, "hidden": [5]}, r"hidden = \[5\] is a list"),
        ({"seed": 3, "sizes": [1, "x"]}, r"sizes = \[1, 'x'\] is not a value of this option"),
        ({"seed": None}, "seed = None is not a value of this option"),
        ({"seed": 3, "hidden": 0}, "--hidden must be positive, not 0"),
        ({"seed": 3, "dropout": float("nan")}, "--dropout must be a finite number, not nan"),
    ]:
        with pytest.raises(ProgramlError, match=f"^config.json: {reason}$"):
            Toy.from_config(values, "config.json")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Run(Options):
    where: str = option(metavar="DIR", required=True, help="where it runs")
    steps: list[int | str] = option([30, "stable"], type=lambda t: t if t == "stable" else int(t), help="steps")
    platform: str = option("all", choices=("a", "all"), help="default: all", default_text="")
    split: str = option("test", choices=("test", "val"), help="")
    loaded: str | None = option(None, metavar="FILE", help="read a file", action=argparse._StoreAction)


def test_run_options_need_no_hand_written_argument() -> None:
    """A required option, a value type of its own, an action, a help that says its default itself, and one that is
    only its default."""
    parser = argparse.ArgumentParser(prog="x")
    add_options(parser, Run)
    text = " ".join(parser.format_help().split())
    assert "--where DIR where it runs" in text and "--loaded FILE read a file" in text
    assert "--platform {a,all} default: all --split {test,val} (default: test)" in text
    assert "(default: all)" not in text and "--steps STEPS [STEPS ...] steps (default: 30 stable)" in text
    with pytest.raises(SystemExit):
        parser.parse_args([])  # --where is required
    run = Run.from_args(parser.parse_args(["--where", "w", "--steps", "5", "stable", "--loaded", "f"]))
    assert (run.where, run.steps, run.platform, run.split, run.loaded) == ("w", [5, "stable"], "all", "test", "f")
