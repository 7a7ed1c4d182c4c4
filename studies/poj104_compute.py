#!/usr/bin/env python3
"""POJ-104 ways of training compared at equal compute: validation error against training CPU-hours (issue 40, item 4).

Each arm is one ``programl train classifyapp`` run directory, given as ``LABEL=DIR``. Its compute is the training
time of its epochs (each epoch's ``seconds`` less its ``val_seconds``: validating every epoch is the protocol's cost,
the same for every arm, not learning) times the threads it ran on (``threads`` of each record), in CPU-hours; its
error is the validation error after each epoch, and the test error of its best checkpoint (``result.json``) is drawn
as a star at that epoch's compute. Records without ``val_seconds`` (runs from before it was logged) count the whole
epoch.

A run whose directory is gone is given by its table instead, ``--csv LABEL=FILE`` (columns ``epoch``, ``where``,
``seconds``, ``val_error`` in percent, e.g. ``studies/data/poj104-bf16-run.csv``): a row whose ``where`` names CPU
threads ("CPU, 2 threads") counts its seconds times those threads; a GPU epoch counts as the median CPU epoch of the
table (its CPU-equivalent), so such a curve is drawn against CPU-hours like the others. Its seconds include
validation. Several tables joined by commas (``LABEL=FILE,FILE``) are one run, each continuing the one before (e.g.
fine-tuning cycles from the run's weights, ``studies/data/poj104-cycles-1-3-run.csv``). An optional ``test_error``
column (percent) draws a test star at each row that has one (a model read on the test split then); the last is
the arm's test error.

Printed, and written with ``--json``: per arm, the epochs, CPU-hours, best validation error, test error, the
CPU-hours at which the arm first reached each ``--level`` (validation error in percent, read off the curve with
log-log interpolation between epochs; none where it never did), each arm's compute multiplier against the first arm
(the first arm's CPU-hours to reach its own best validation error over this arm's; above 1: cheaper), and, for the
arms named by ``--fit``, a fit of
``error = floor + a * hours ** -b`` to the arm's best-so-far curve once it is below ``FIT_BELOW`` % (the start from
chance, 99 %, is no power law), with at least ``FIT_POINTS`` such epochs (the floor is where more of the same compute
would lead; a fit, not a measurement, and only as good as the curve is long) with the CPU-hours at which the fitted
curve reaches ``--project`` (default: the paper's 3.38 %; never where the floor is above it): an extrapolation of
the curve as it ran, schedule and all, not of a longer run of the same recipe. A curve that has reached the limit of
its data (validation error flat or rising while training error falls) is no power law in compute: fit only curves
that are still falling.

Usage::

    python studies/poj104_compute.py "O0=runs/A" "O0-O3=runs/B" -o studies/img/poj104-compute.png --json out.json
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plot_dataflow_runs import read_log, save_figure  # noqa: E402

from programl.exceptions import ProgramlError  # noqa: E402
from programl.util.fs import read_json  # noqa: E402

PAPER_ERROR = 3.38
#: the fit reads the best-so-far validation error once below this (%), from at least this many epochs
FIT_BELOW = 50.0
FIT_POINTS = 6


def parse_arm(text: str) -> tuple[str, Path]:
    """``LABEL=DIR`` -> (label, directory)."""
    label, sep, directory = text.partition("=")
    if not sep or not label or not directory:
        raise ValueError(f"{text!r}: give an arm as LABEL=DIR")
    return label, Path(directory)


def _curve(label: str, source: Path, hours: list[float], errors: list[float]) -> dict:
    """An arm: its cumulative CPU-hours and validation errors (%) per epoch, its best epoch; no test star yet
    (``tests``: the stars; ``test``: the last of them, the arm's test error)."""
    best = min(errors)
    return {
        "label": label,
        "run_dir": str(source),
        "epochs": len(errors),
        "hours": hours,
        "val": errors,
        "best_val": best,
        "best_epoch": errors.index(best) + 1,
        "test": None,
        "tests": [],
    }


def read_arm(label: str, run_dir: Path) -> dict:
    """An arm's curve: cumulative training CPU-hours and validation error (%) per epoch, its test star."""
    records = read_log(run_dir)
    if not records:
        raise ValueError(f"{run_dir}: no epochs in log.jsonl")
    hours, errors, total = [], [], 0.0
    for record in records:
        training = float(record["seconds"]) - float(record.get("val_seconds", 0.0))
        total += max(training, 0.0) * int(record.get("threads") or 1) / 3600.0
        hours.append(total)
        errors.append(100.0 * float(record["val_error"]))
    arm = _curve(label, run_dir, hours, errors)
    result_path = run_dir / "result.json"
    if result_path.is_file():
        result = read_json(result_path)
        epoch = result.get("checkpoint_epoch", result.get("best_epoch"))
        if isinstance(result.get("test"), dict) and isinstance(epoch, int) and 1 <= epoch <= len(records):
            arm["test"] = {"epoch": epoch, "hours": hours[epoch - 1], "error": 100.0 * result["test"]["error"]}
            arm["tests"] = [arm["test"]]
    return arm


def read_table(label: str, path: Path) -> dict:
    """An arm from a run's per-epoch table, or tables joined by commas (module docstring: ``--csv``)."""
    rows = []
    for part in str(path).split(","):
        with open(part, newline="") as stream:
            rows += list(csv.DictReader(stream))
    if not rows:
        raise ValueError(f"{path}: no epochs")
    try:
        cpu = {}
        for index, row in enumerate(rows):
            threads = re.search(r"(\d+) threads?", row["where"])
            if threads:
                cpu[index] = float(row["seconds"]) * int(threads.group(1)) / 3600.0
        errors = [float(row["val_error"]) for row in rows]
        tested = [
            (index, float(row["test_error"])) for index, row in enumerate(rows) if (row.get("test_error") or "").strip()
        ]
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path}: needs the columns epoch, where, seconds and val_error ({error})") from None
    except ValueError as error:
        raise ValueError(f"{path}: not a number ({error})") from None
    if not cpu:
        raise ValueError(f"{path}: no CPU epoch to measure the others by")
    median = statistics.median(cpu.values())
    hours, total = [], 0.0
    for index in range(len(rows)):
        total += cpu.get(index, median)
        hours.append(total)
    tests = [{"epoch": index + 1, "hours": hours[index], "error": error} for index, error in tested]
    arm = _curve(label, path, hours, errors)
    if tests:
        arm["test"], arm["tests"] = tests[-1], tests
    return arm


def hours_to_reach(arm: dict, level: float) -> float | None:
    """The CPU-hours at which the arm's validation error first reached ``level`` (%), interpolated log-log between
    the epoch before and the epoch that reached it; None if it never did."""
    previous = None
    for hours, error in zip(arm["hours"], arm["val"]):
        if error <= level:
            if previous is None or previous[1] <= error:
                return hours
            (h0, e0), (h1, e1) = previous, (hours, error)
            t = (math.log(e0) - math.log(level)) / (math.log(e0) - math.log(e1))
            return math.exp(math.log(h0) + t * (math.log(h1) - math.log(h0)))
        previous = (hours, error)
    return None


def fit_floor(arm: dict) -> dict | None:
    """``error = floor + a * hours ** -b`` fitted to the best-so-far validation curve below ``FIT_BELOW`` % (at least
    ``FIT_POINTS`` epochs), or None."""
    import numpy as np
    from scipy.optimize import curve_fit

    x = np.asarray(arm["hours"], dtype=float)
    y = np.minimum.accumulate(np.asarray(arm["val"], dtype=float))
    keep = y < FIT_BELOW
    if int(keep.sum()) < FIT_POINTS:
        return None
    x, y = x[keep], y[keep]

    def curve(h, floor, a, b):
        return floor + a * np.power(h, -b)

    try:
        (floor, a, b), _ = curve_fit(
            curve, x, y, p0=(y[-1] / 2, y[0] * x[0], 1.0), bounds=([0.0, 0.0, 0.0], [100.0, 1e6, 5.0]), maxfev=20000
        )
    except (RuntimeError, ValueError):
        return None
    return {"floor": float(floor), "a": float(a), "b": float(b)}


def fitted_hours(fit: dict | None, level: float) -> float | None:
    """The CPU-hours at which ``floor + a * hours ** -b`` reaches ``level``; None where it never does."""
    if fit is None or fit["floor"] >= level or fit["a"] <= 0 or fit["b"] <= 0:
        return None
    return (fit["a"] / (level - fit["floor"])) ** (1.0 / fit["b"])


def compare(
    arms: list[dict], levels: list[float], project: float = PAPER_ERROR, fit: tuple[str, ...] = ()
) -> list[dict]:
    """Per arm: the summary of the module docstring (the fit for the arms labelled in ``fit``)."""
    base = arms[0]
    base_hours = hours_to_reach(base, base["best_val"])
    rows = []
    for arm in arms:
        reach = hours_to_reach(arm, base["best_val"])
        fitted = fit_floor(arm) if arm["label"] in fit else None
        rows.append(
            {
                "label": arm["label"],
                "run_dir": arm["run_dir"],
                "epochs": arm["epochs"],
                "cpu_hours": arm["hours"][-1],
                "best_val_error": arm["best_val"],
                "best_epoch": arm["best_epoch"],
                "test_error": arm["test"]["error"] if arm["test"] else None,
                "hours_to": {f"{level:g}": hours_to_reach(arm, level) for level in levels},
                "multiplier": (base_hours / reach) if reach and base_hours else None,
                "fit": fitted,
                "project": project,
                "fitted_hours_to_project": fitted_hours(fitted, project),
            }
        )
    return rows


def table(rows: list[dict], levels: list[float], base_label: str) -> str:
    def cell(value, digits=2, suffix=""):
        return "never" if value is None else f"{value:.{digits}f}{suffix}"

    head = ["arm", "epochs", "CPU-hours", "best val error", "test error"]
    head += [f"CPU-hours to {level:g} %" for level in levels]
    project = rows[0]["project"] if rows else PAPER_ERROR
    head += [f"compute multiplier (vs {base_label})", "fitted floor, exponent", f"fit: CPU-hours to {project:g} %"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        fit = row["fit"]
        cells = [
            row["label"],
            str(row["epochs"]),
            cell(row["cpu_hours"]),
            cell(row["best_val_error"], suffix=" %") + f" (epoch {row['best_epoch']})",
            cell(row["test_error"], suffix=" %") if row["test_error"] is not None else "–",
            *[cell(row["hours_to"][f"{level:g}"]) for level in levels],
            "never" if row["multiplier"] is None else f"{row['multiplier']:.2f}×",
            "–" if fit is None else f"{fit['floor']:.1f} %, {fit['b']:.2f}",
            "–" if fit is None else cell(row["fitted_hours_to_project"], 1),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(arms: list[dict], output: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    figure, axes = plt.subplots(figsize=(12, 5.5))
    for number, arm in enumerate(arms):
        color = f"C{number}"
        axes.plot(arm["hours"], arm["val"], marker="o", markersize=3, color=color, label=f"{arm['label']}, validation")
        tests = arm["tests"]
        if tests:
            axes.plot(
                [test["hours"] for test in tests],
                [test["error"] for test in tests],
                marker="*",
                markersize=14,
                color=color,
                linestyle="none",
                label=f"{arm['label']}, test (best checkpoint{'s' if len(tests) > 1 else ''})",
            )
    axes.axhline(
        PAPER_ERROR, color="black", linestyle="--", linewidth=1, label=f"the paper's test error ({PAPER_ERROR} %)"
    )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_yticks([3, 5, 10, 20, 40, 80], labels=["3", "5", "10", "20", "40", "80"])
    axes.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    axes.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes.set_xlabel(
        "training CPU-hours (times threads; a run directory without validation, a table with it; log scale)"
    )
    axes.set_ylabel("error % (log scale)")
    axes.set_title(title)
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save_figure(figure, output)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arms", nargs="*", help="LABEL=DIR, a run directory of `programl train classifyapp`")
    parser.add_argument("--csv", nargs="*", default=[], help="LABEL=FILE, a run known by its per-epoch table")
    parser.add_argument("-o", "--output", type=Path, help="PNG of error against CPU-hours")
    parser.add_argument("--json", type=Path, help="write the comparison here")
    parser.add_argument("--level", type=float, nargs="*", default=[], help="validation errors (%%) to reach")
    parser.add_argument("--fit", nargs="*", default=[], metavar="LABEL", help="arms to fit a power law to")
    parser.add_argument("--project", type=float, default=PAPER_ERROR, help="error (%%) the fits extrapolate to")
    parser.add_argument("--title", default="POJ-104: validation error against training compute")
    args = parser.parse_args(argv)
    try:
        arms = [read_arm(*parse_arm(text)) for text in args.arms]
        arms += [read_table(*parse_arm(text)) for text in args.csv]
        if not arms:
            raise ValueError("give at least one arm (LABEL=DIR or --csv LABEL=FILE)")
    except (OSError, ValueError, KeyError, TypeError, ProgramlError) as error:
        print(f"poj104_compute.py: {error}", file=sys.stderr)
        return 1
    unknown = sorted(set(args.fit) - {arm["label"] for arm in arms})
    if unknown:
        print(f"poj104_compute.py: --fit names no arm: {', '.join(unknown)}", file=sys.stderr)
        return 1
    rows = compare(arms, args.level, args.project, tuple(args.fit))
    print(table(rows, args.level, arms[0]["label"]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"arms": rows, "curves": arms}, indent=1) + "\n")
    if args.output:
        plot(arms, args.output, args.title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
