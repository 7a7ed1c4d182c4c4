"""The data-flow task as the package sees it (issue 35; SPEC §6.1, §7.1): the network of a run's options, and what
its pretrained models' ``model.json`` and cards say. No torch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from programl.exceptions import ProgramlError
from programl.tasks.base import TaskSpec, require_options
from programl.tasks.run_files import RunFiles
from programl.util.text import fmt, markdown_table

__all__ = ["ANALYSIS_MEANING", "DataflowSpec"]

#: What each data-flow model labels (SPEC §4.2-§4.6).
ANALYSIS_MEANING = {
    "reachability": "the instructions reachable from the root instruction along control flow (the root included)",
    "dominance": "the nodes of the root's function that the root instruction dominates (the root included)",
    "datadep": "the instructions the root variable depends on through data flow (its producers, transitively)",
    "liveness": "the variables and constants live out of the root instruction",
    "subexpressions": "the instructions that compute the same expression as the root instruction (the root included)",
}
#: The network class of each ``--model``.
_CLASSES = {"ggnn": "DataflowGGNN", "rgcn": "DataflowRGCN"}


class DataflowSpec(TaskSpec):
    name = "dataflow"
    summary = "learn a data-flow analysis (node labels per root) on a DeepDataFlow data set"
    title = "ProGraML data-flow GGNN"
    train_module = "programl.tasks.dataflow.train"
    best_metric = "best_val_f1"

    def model_spec(self, config: Mapping[str, Any], vocabulary_size: int, where: str = "config.json") -> dict:
        o = require_options(config, ("model", "steps"), where)
        if o["model"] not in _CLASSES:
            raise ProgramlError(f"{where}: unknown data-flow model {o['model']!r}")
        kwargs: dict[str, Any] = {"num_steps": o["steps"]}
        if config.get("root_context"):  # the variant's key only where it is on: the faithful models' specs stay
            kwargs["root_context"] = True
        return {"class": _CLASSES[o["model"]], "args": [vocabulary_size], "kwargs": kwargs}

    # ---------------------------------------------------------------------------------------------------- export
    def default_name(self, files: RunFiles) -> str:
        return str(files.config["model"].get("analysis", "dataflow"))

    def metadata_entries(self, files: RunFiles) -> dict[str, Any]:
        config = files.config["model"]
        return {"analysis": config.get("analysis"), "steps": config.get("steps")}

    def outputs(self, files: RunFiles) -> dict[str, Any]:
        analysis = files.config["model"].get("analysis")
        return {
            "level": "node",
            "classes": ["false", "true"],
            "meaning": f"per node, whether it is among {ANALYSIS_MEANING.get(analysis, 'the labelled nodes')}",
        }

    def scores(self, files: RunFiles) -> dict[str, Any]:
        result = files.result
        keep = (
            "split",
            "checkpoint",
            "checkpoint_epoch",
            "best_epoch",
            "best_val_f1",
            "paper_ddf30",
            "train_examples_seen",
            "train_examples_available",
            "val_examples",
        )
        drop = ("confusion_matrix", "per_class_accuracy", "rows", "predictions")
        out = {k: result[k] for k in keep if k in result}
        out["tests"] = {
            name: {k: v for k, v in test.items() if k not in drop} for name, test in (result.get("tests") or {}).items()
        }
        return out

    # ---------------------------------------------------------------------------------------------------- card
    def card_task_line(self, m: Mapping[str, Any]) -> str:
        return f"dataflow ({m.get('analysis')})"

    def card_data(self, m: Mapping[str, Any]) -> list[str]:
        config = m["training"]["config"]
        options, scope = config.get("model", {}), config.get("scope", {})
        return [
            f"DeepDataFlow data set `{fmt(config.get('dataset'))}`, analysis {options.get('analysis')}: "
            f"{fmt(scope.get('train_examples_available'))} training examples, a fixed validation sample of "
            f"{fmt(scope.get('val_examples'))} (of {fmt(scope.get('val_examples_available'))}); examples with more "
            f"than {fmt(options.get('max_steps'))} data-flow steps (DDF-{options.get('max_steps')}) and graphs of "
            f"more than {fmt(options.get('max_nodes'))} nodes are left out of training and validation. The "
            f"vocabulary is the data set's ({fmt(scope.get('vocabulary'))} texts)."
        ]

    def card_scores(self, s: Mapping[str, Any]) -> list[str]:
        rows = []
        for name, t in s.get("tests", {}).items():
            limit = t.get("max_data_flow_steps")
            rows.append(
                (
                    name,
                    fmt(t.get("steps")),
                    f"DDF-{limit}" if limit else "all",
                    fmt(t.get("examples")),
                    fmt(t.get("precision"), ".3f"),
                    fmt(t.get("recall"), ".3f"),
                    fmt(t.get("f1"), ".3f"),
                    fmt(t.get("pooled_f1"), ".3f"),
                )
            )
        lines = [
            f"Split `{s.get('split', 'test')}`, checkpoint of epoch {fmt(s.get('checkpoint_epoch'))} (best "
            f"validation F1 {fmt(s.get('best_val_f1'), '.4f')}); precision, recall and F1 of the true class, "
            "averaged over batches weighted by nodes (the paper's numbers) and pooled over all nodes:",
            "",
        ]
        lines += markdown_table(("test", "T", "filter", "examples", "precision", "recall", "F1", "pooled F1"), rows)
        paper = s.get("paper_ddf30")
        if paper:
            lines += [
                "",
                f"Published (ProGraML, DDF-30): precision {paper.get('precision')}, recall "
                f"{paper.get('recall')}, F1 {paper.get('f1')}.",
            ]
        return lines

    def card_limitations(self, m: Mapping[str, Any]) -> list[str]:
        options = m["training"]["config"].get("model", {})
        tested = m.get("scores", {}).get("tests", {})
        compare = (
            f"compare the rows of T > {options.get('max_steps')} above"
            if any((t.get("steps") or 0) > (options.get("max_steps") or 0) for t in tested.values())
            else "not measured for this model beyond T=" + str(options.get("steps"))
        )
        return [
            f"Trained and validated on examples of at most {options.get('max_steps')} data-flow steps; "
            f"roots whose analysis needs more steps than the model runs are predicted less well ({compare}). "
            "`programl predict dataflow --compare FILE` shows the exact labels beside the predicted ones."
        ]

    def predict_command(self, m: Mapping[str, Any]) -> str:
        return (
            f"programl predict dataflow --analysis {m.get('analysis')}"
            + (f" --model {m['name']}" if m["name"] != m.get("analysis") else "")
            + " FILE.ll --roots 3 --compare"
        )
