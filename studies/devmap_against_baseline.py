"""A devmap result against a non-graph baseline or another run, fold by fold (SPEC §6.5; issue 11's "at least level
with the best non-graph baseline on the same folds"; issue 40's ablations: one design with and without an input).

Reads a ``summary.json`` that ``programl train devmap`` or ``programl evaluate devmap --ensemble --out DIR`` wrote
and, as the baseline, either the JSON of ``studies/heuristics.py`` (``--method`` picks its method) or a second
such ``summary.json`` (a run to compare against), checks that both used the same folds (count and fold seed), and
prints
per platform: both accuracies per fold, on how many folds the model is above, level with or below the baseline, the
mean per-fold difference and its standard error (the sample standard deviation of the differences over sqrt(folds)).
Where the folds are equal in size (devmap's ten folds hold 68 kernels each), the mean of the fold accuracies is the
accuracy over all kernels.

    python studies/devmap_against_baseline.py runs/devmap-avg-ensemble-amd/summary.json \\
        runs/heuristics-mlp.json --method rf-aux+texts
    python studies/devmap_against_baseline.py runs/with/summary.json runs/without/summary.json

Exit 1 with one line when a file is missing or damaged or the folds differ.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from programl.exceptions import ProgramlError  # noqa: E402
from programl.util.fs import read_json  # noqa: E402
from studies.paired import paired_difference  # noqa: E402


class CompareError(Exception):
    """A file that cannot be compared (missing, damaged, other folds): one line for the user."""


def _read_object(path: Path) -> dict:
    try:
        data = read_json(path)
    except ProgramlError as error:
        raise CompareError(str(error)) from None
    if not isinstance(data, dict):
        raise CompareError(f"{path}: not a JSON object")
    return data


def model_folds(summary: dict, path: Path) -> tuple[dict[str, list[float]], int, int]:
    """Per platform the model's per-fold test accuracies, and the folds' count and seed, from a ``summary.json``."""
    try:
        config, platforms = summary["config"], summary["platforms"]
        folds = {name: [float(a) for a in entry["per_fold"]["accuracy"]] for name, entry in platforms.items()}
        return folds, int(config["folds"]), int(config["fold_seed"])
    except (KeyError, TypeError, ValueError) as error:
        raise CompareError(f"{path}: not a devmap summary.json (no {error})") from None


def baseline_folds(heuristics: dict, method: str, path: Path) -> tuple[dict[str, list[float]], int, int]:
    """Per platform the baseline's per-fold accuracies, and the folds' count and seed, from heuristics.py's JSON."""
    try:
        results = heuristics["results"]
        methods = sorted({m for entry in results.values() for m in entry})
        if any(method not in entry for entry in results.values()):
            raise CompareError(f"{path}: no method {method!r} (it has {', '.join(methods)})")
        folds = {name: [float(f["accuracy"]) for f in entry[method]["folds"]] for name, entry in results.items()}
        return folds, int(heuristics["folds"]), int(heuristics["fold_seed"])
    except (KeyError, TypeError, ValueError) as error:
        raise CompareError(f"{path}: not the JSON of studies/heuristics.py (no {error})") from None


def compare(model: list[float], baseline: list[float]) -> dict:
    """Fold-by-fold comparison of two equal-length lists of accuracies (fractions); differences in points
    (:func:`studies.paired.paired_difference`)."""
    d = paired_difference(model, baseline)
    return {
        "model": 100.0 * sum(model) / len(model),
        "baseline": 100.0 * sum(baseline) / len(baseline),
        "above": d.above,
        "level": d.level,
        "below": d.below,
        "mean_difference": d.mean,
        "standard_error": d.standard_error,
    }


def is_run_summary(data: dict) -> bool:
    """Whether a JSON object is a devmap run's ``summary.json`` (else it is read as heuristics.py's JSON)."""
    return "platforms" in data and "config" in data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("summary", type=Path, help="summary.json of a devmap run or ensemble")
    parser.add_argument(
        "heuristics", type=Path, help="the JSON written by studies/heuristics.py, or a second run's summary.json"
    )
    parser.add_argument(
        "--method", default="rf-aux+texts", help="heuristics.py's baseline (default: rf-aux+texts, the forest)"
    )
    args = parser.parse_args(argv)
    try:
        model, folds, seed = model_folds(_read_object(args.summary), args.summary)
        baseline = _read_object(args.heuristics)
        if is_run_summary(baseline):
            base, base_folds, base_seed = model_folds(baseline, args.heuristics)
            args.method = "baseline run"
        else:
            base, base_folds, base_seed = baseline_folds(baseline, args.method, args.heuristics)
        if (folds, seed) != (base_folds, base_seed):
            raise CompareError(
                f"{args.summary}: {folds} folds of seed {seed}, but {args.heuristics} has {base_folds} of seed "
                f"{base_seed}: not the same folds"
            )
        platforms = [p for p in model if p in base]
        if not platforms:
            raise CompareError(f"{args.summary}: no platform that {args.heuristics} also has")
        for platform in platforms:
            if len(model[platform]) != len(base[platform]):
                raise CompareError(
                    f"{args.summary}: {platform} has {len(model[platform])} finished folds of {folds}; compare it "
                    "when every fold has finished"
                )
    except CompareError as error:
        print(f"devmap_against_baseline.py: {error}", file=sys.stderr)
        return 1
    print(f"| platform | model % | {args.method} % | per fold above / level / below | mean difference (SE), points |")
    print("|---|---|---|---|---|")
    for platform in platforms:
        c = compare(model[platform], base[platform])
        print(
            f"| {platform} | {c['model']:.1f} | {c['baseline']:.1f} | {c['above']} / {c['level']} / {c['below']} "
            f"| {c['mean_difference']:+.2f} ({c['standard_error']:.2f}) |"
        )
    for platform in platforms:
        pairs = " ".join(f"{100 * m:.1f}/{100 * b:.1f}" for m, b in zip(model[platform], base[platform]))
        print(f"{platform} per fold (model/baseline): {pairs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
