"""What a data-flow model's false positives are (issue 11 item 4: the measured reason behind a score).

:func:`false_positive_kinds` runs a pretrained data-flow model over examples and describes every node it predicts
true that the analysis labels false: its text and its root's, whether it has the root's text, and whether it shares
an operand with the root (a node with a data edge into both). For subexpressions (SPEC §4.6, "same opcode and the
same operand nodes") this is what found the faithful GGNN's failure: its false positives share an operand with the
root but have another opcode (``studies/history/results-history.md`` §5), which led to the root-context variant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from programl.exceptions import ProgramlError

__all__ = ["FalsePositiveKinds", "false_positive_kinds"]

#: ``edge_flow`` of data edges (:func:`programl.io.pyg.to_pyg`).
_DATA = 1


@dataclass
class FalsePositiveKinds:
    """Counts over the false positives of a set of examples.

    Attributes:
        examples: Examples scored.
        true_positives, false_positives, false_negatives: Node counts.
        pairs: ``(root text, false positive's text)`` -> count.
        shares_operand: False positives with a data-edge source in common with their root.
        same_text: False positives with their root's text.
        per_example: The number of false positives of each example that has any.
    """

    examples: int = 0
    true_positives: int = 0
    false_positives: int = 0
    false_negatives: int = 0
    pairs: Counter = field(default_factory=Counter)
    shares_operand: int = 0
    same_text: int = 0
    per_example: list[int] = field(default_factory=list)

    def to_dict(self, top: int = 25) -> dict[str, Any]:
        return {
            "examples": self.examples,
            "true_positives": self.true_positives,
            "false_positives": self.false_positives,
            "false_negatives": self.false_negatives,
            "shares_operand_with_root": self.shares_operand,
            "same_text_as_root": self.same_text,
            "examples_with_false_positives": len(self.per_example),
            "most_in_one_example": sorted(self.per_example, reverse=True)[:10],
            "pairs": [{"root": r, "false_positive": f, "count": n} for (r, f), n in self.pairs.most_common(top)],
        }


def _operands(edge_index: np.ndarray, edge_flow: np.ndarray, node: int) -> set[int]:
    into = (edge_index[1] == node) & (edge_flow == _DATA)
    return set(edge_index[0, into].tolist())


def false_positive_kinds(
    pretrained,
    dataset,
    *,
    steps: int | None = None,
    batch_nodes: int = 10_000,
    progress: Callable[[Iterable, int, str], Iterable] | None = None,
) -> FalsePositiveKinds:
    """Describe the false positives of a data-flow model on ``dataset`` (at ``steps``, default the model's).

    Args:
        pretrained: A :class:`~programl.pretrained.hub.PretrainedModel` of task ``dataflow``.
        dataset: Examples encoded with the model's vocabulary (``x``, ``root``, ``y``, ``edge_index``, ``edge_flow``).
        steps: Message-passing steps T.
        batch_nodes: Nodes per batch (examples are never split).
        progress: Optional wrapper ``progress(items, total, description)`` around the batches.

    Raises:
        ProgramlError: A model that is not a data-flow model.
    """
    import torch
    from torch_geometric.data import Batch

    from programl.loader import plan_batches

    if pretrained.task != "dataflow":
        raise ProgramlError(f"{pretrained.name}: a {pretrained.task} model, not a data-flow model")
    names = pretrained.vocabulary.texts

    def text(token: int) -> str:
        return names[token] if token < len(names) else "<out of vocabulary>"

    out = FalsePositiveKinds()
    batches: Sequence = list(plan_batches(np.asarray(dataset.sizes), batch_nodes, "carry"))
    if progress is not None:
        batches = progress(batches, len(batches), "predicting")
    model = pretrained.model
    for indices in batches:
        examples = [dataset[i] for i in indices]
        batch = Batch.from_data_list(examples).to(pretrained.device)
        with torch.no_grad():
            logits = model(batch) if steps is None else model(batch, num_steps=steps)
        predicted = (logits.argmax(-1) == 1).cpu().numpy()
        offsets = batch.ptr.cpu().numpy()
        for k, data in enumerate(examples):
            out.examples += 1
            guess = predicted[offsets[k] : offsets[k + 1]]
            truth = data.y.numpy().astype(bool)
            out.true_positives += int(np.sum(guess & truth))
            out.false_negatives += int(np.sum(~guess & truth))
            wrong = np.flatnonzero(guess & ~truth)
            if not len(wrong):
                continue
            out.false_positives += len(wrong)
            out.per_example.append(len(wrong))
            x = data.x.numpy()
            edge_index, edge_flow = data.edge_index.numpy(), data.edge_flow.numpy()
            root = int(data.root.argmax())
            root_operands = _operands(edge_index, edge_flow, root)
            for node in wrong.tolist():
                out.pairs[(text(int(x[root])), text(int(x[node])))] += 1
                out.shares_operand += bool(root_operands & _operands(edge_index, edge_flow, node))
                out.same_text += int(x[node]) == int(x[root])
    return out
