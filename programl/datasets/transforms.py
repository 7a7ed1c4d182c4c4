"""Vocabulary encoding as a PyG transform, and the text tables of processed data sets (docs/spec/models.md#vocabulary,
docs/spec/tasks.md#algorithm-classification).

The data sets of :mod:`programl.datasets` store node texts as ids into the data set's own text table
(``dataset.texts``: every distinct node text of the processed data, in first-seen order; id ``len(texts)`` is
unknown). Which vocabulary a model embeds is a choice of the task (the training split's count-ordered vocabulary for
POJ-104 and devmap, docs/spec/tasks.md#device-mapping, docs/spec/tasks.md#algorithm-classification; the data set's
``vocab/programl.csv`` for DeepDataFlow), so it is applied as a transform: :class:`EncodeVocabulary` maps the ids of
``data.x`` through ``texts`` to a :class:`~programl.data.vocabulary.Vocabulary` (unknown texts -> its OOV id
``len(vocabulary)``).

Example::

    train = POJ104(root, split="train")
    vocabulary = train.vocabulary()          # count-ordered, from the training graphs
    encode = EncodeVocabulary(vocabulary, train.texts)
    train.transform = encode                 # or POJ104(root, split="val", transform=encode)

:class:`AddDeadBranches` shows training the dead blocks of old IR (clang 10 and 14 leave them, clang-22 does not):
isolated ``br`` instructions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

import programl

try:
    import torch
    from torch_geometric.data import Data
    from torch_geometric.transforms import BaseTransform
except ModuleNotFoundError as _error:  # installed without the ml extra: one line that says which extra to install
    raise programl._ml_import_error("programl.datasets", _error) or _error from None

from programl.data.vocabulary import Vocabulary

__all__ = [
    "AddDeadBranches",
    "EncodeVocabulary",
    "TextTable",
    "count_vocabulary",
    "graph_example",
    "split_vocabulary",
]


class TextTable(dict):
    """A text -> id table that gives every new text the next id when asked to (:meth:`add`): the ``vocabulary`` of
    :func:`programl.io.pyg.to_pyg` while a data set is processed (to_pyg adds each node text, so no text is unknown);
    :attr:`texts` in id order. Reading it (``table[text]``, ``get``, ``in``) never changes it.

    >>> table = TextTable()
    >>> table.add("alloca"), table.add("ret"), table.add("alloca")
    (0, 1, 0)
    >>> table.get("store", 2), table.texts
    (2, ['alloca', 'ret'])
    """

    def add(self, text: str) -> int:
        """The id of ``text``: its id when the table has it, else the next id (``len(self)``), now its own."""
        return self.setdefault(text, len(self))

    @property
    def texts(self) -> list[str]:
        return list(self)


def graph_example(
    graph,
    table: TextTable,
    keep: Sequence[str],
    *,
    numbers_and_types: bool = False,
    string_bytes: bool = False,
) -> Data:
    """A built graph as a data set example: the attributes ``keep`` of :func:`programl.io.pyg.to_pyg` (node texts
    added to ``table``), and with ``numbers_and_types`` / ``string_bytes`` the graph annotated first (in place) and
    ``x_num`` / ``x_type`` / ``x_str`` kept too (``docs/numbers_types.md``; not in ProGraML), stored as int32
    (:func:`compact_features`)."""
    from programl.io.pyg import to_pyg

    if numbers_and_types:
        from programl.graph_builder.numbers_types import annotate

        annotate(graph)
    if string_bytes:
        from programl.graph_builder import string_bytes as strings

        strings.annotate(graph)
    d = to_pyg(graph, table, numbers_and_types=numbers_and_types, string_bytes=string_bytes)
    extra = (*(("x_num", "x_type") if numbers_and_types else ()), *(("x_str",) if string_bytes else ()))
    return Data(**{k: d[k] for k in keep}, **{k: compact_features(d[k]) for k in extra}, num_nodes=d.num_nodes)


_INT32_MAX = 2**31 - 1


def compact_features(values: torch.Tensor) -> torch.Tensor:
    """``x_num`` / ``x_type`` / ``x_str`` of :func:`programl.io.pyg.to_pyg` (int64) as int32, the form a data set
    stores: in int64 they were 804 of 1,021 MiB of POJ-104's validation split with strings, nearly all zero rows
    (``docs/numbers_types.md``). Values above 2**31 - 1 (a type's element count or bit width, a string's length;
    nothing else comes near) are clamped to it, which the models cannot tell apart: they read such a count by its
    log2 bucket, capped at 31 (:mod:`programl.models.numbers_types`). Digits, signs, exponents (|e| <= 64) and byte
    ids are kept exactly."""
    return values.clamp(max=_INT32_MAX).to(torch.int32)


def count_vocabulary(texts: Sequence[str], ids: Iterable[torch.Tensor]) -> Vocabulary:
    """The count-ordered :class:`Vocabulary` of the node texts ``texts[i]`` for every id ``i`` in ``ids``."""
    counts = np.zeros(len(texts) + 1, dtype=np.int64)
    for x in ids:
        counts += np.bincount(np.asarray(x, dtype=np.int64), minlength=len(texts) + 1)[: len(texts) + 1]
    return Vocabulary.from_counts({t: int(c) for t, c in zip(texts, counts[: len(texts)]) if c > 0})


def _node_offsets(dataset) -> torch.Tensor:
    """Where each example's nodes start in an ``InMemoryDataset``'s collated ``x``, and the end (PyG keeps no slices
    for a data set of one example)."""
    if dataset.slices is None:
        return torch.tensor([0, dataset._data.x.size(0)])
    return dataset.slices["x"]


def split_sizes(dataset) -> np.ndarray:
    """Node count of every example an ``InMemoryDataset`` view selects (in its order), for node-budget batching."""
    counts = np.diff(_node_offsets(dataset).numpy())
    return counts[np.asarray(dataset.indices(), dtype=np.int64)]


def split_vocabulary(dataset) -> Vocabulary:
    """:func:`count_vocabulary` of the examples an ``InMemoryDataset`` view selects (its ``indices()``), read from
    the stored ids (before any transform)."""
    x, ptr = dataset._data.x, _node_offsets(dataset)
    return count_vocabulary(dataset.texts, (x[int(ptr[i]) : int(ptr[i + 1])] for i in dataset.indices()))


class EncodeVocabulary(BaseTransform):
    """Map ``data.x`` (ids into ``texts``) to the ids of ``vocabulary`` (a PyG transform; module docstring).

    Args:
        vocabulary: Text -> id (a :class:`Vocabulary` or a ``dict``); unknown texts get ``len(vocabulary)``.
        texts: The text of every id that ``data.x`` may hold (``dataset.texts``); ids at or past ``len(texts)`` are
            unknown too.
    """

    def __init__(self, vocabulary: Mapping[str, int], texts: Sequence[str]) -> None:
        self.vocabulary = vocabulary
        self.texts = list(texts)
        oov = len(vocabulary)
        self.table = torch.tensor([vocabulary.get(t, oov) for t in self.texts] + [oov], dtype=torch.long)

    def forward(self, data: Data) -> Data:
        """``data`` with ``x`` re-encoded: each text id of the data set's table becomes its id in the vocabulary
        (the out-of-vocabulary id for texts it lacks)."""
        x = data.x.clamp(max=len(self.texts))
        data.x = self.table[x]
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.vocabulary)} texts, from a table of {len(self.texts)})"


#: Per-example attributes of the data sets that are not per node (even when an example has one node).
_GRAPH_LEVEL = frozenset({"step_count", "active_nodes", "graph_index", "graph_x", "graph_y"})


class AddDeadBranches(BaseTransform):
    """Append isolated ``br`` instruction nodes to a data-flow example: the dead blocks of old IR.

    clang-10 (and clang-14) at -O0 keep a block after ``unreachable`` or after a ``return`` in the middle of a
    function, nearly always a lone ``br label %next``; it has no predecessor, so both builders give its instruction
    no control edge at all (docs/spec/graph.md#construction-order: unreachable blocks get no inter-block control edges),
    nor a data or call edge. clang-22 never emits such blocks, so DeepDataFlow-22 has none, and the shipped models label
    such a ``br`` reachable from almost every root: on graphs of old IR (the original's DeepDataFlow, a user's clang-10
    pipeline) they are most of reachability's false positives (``benchmarks/original_graphs.py``). With this transform
    on the training split (``DeepDataFlow.from_directory(..., transform=AddDeadBranches(vocabulary["br"]))``) the
    model sees them.

    The labels stay exact for the five analyses: a node without edges is reached by no root (reachability), is not
    dominated by the root (dominance: its set is ``{n}``), depends on nothing (datadep), and is neither a live
    variable nor a subexpression, so its ``y`` is 0; no root moves. Only dominance's ``step_count`` is low by the
    added nodes (each costs one step of the first sweep when it is in the root's function), which matters for a
    step-count filter applied after the transform, not to the labels.

    Args:
        br_id: The vocabulary id of the text ``br`` (``data.x`` holds vocabulary ids, as the data sets store them).
        probability: Chance that an example gets dead branches at all (default 0.5).
        max_count: At most this many per example (uniform in 1..max_count; default 3).
        seed: Seed of the draws (default: from ``torch.initial_seed()``, which differs per DataLoader worker).
        keyed: Draw each example's dead branches from ``(seed, graph_index, root)`` instead of one stream, so that an
            example gets the same ones whatever the order, the workers or a resumed run (what training uses:
            ``programl train dataflow --dead-branches P``).
    """

    def __init__(
        self,
        br_id: int,
        probability: float = 0.5,
        max_count: int = 3,
        seed: int | None = None,
        keyed: bool = False,
    ) -> None:
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"probability must be in [0, 1], not {probability!r}")
        if max_count < 1:
            raise ValueError(f"max_count must be at least 1, not {max_count!r}")
        self.br_id = int(br_id)
        self.probability = float(probability)
        self.max_count = int(max_count)
        self.seed = seed
        self.keyed = keyed
        if keyed and seed is None:
            raise ValueError("keyed draws need a seed")
        self._rng: np.random.Generator | None = None

    def _generator(self, data: Data) -> np.random.Generator:
        if self.keyed:
            graph = int(data.graph_index.reshape(-1)[0]) if "graph_index" in data else 0
            root = int(data.root.argmax()) if "root" in data and data.root.numel() else 0
            return np.random.default_rng([self.seed, graph, root])
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed if self.seed is not None else torch.initial_seed() % 2**63)
        return self._rng

    def forward(self, data: Data) -> Data:
        """``data`` with 0 to ``max_count`` more nodes at the end: ``x`` = ``br_id``, ``node_type`` 0
        (instruction), every other per-node tensor (``y``, ``root`` ...) 0; no edges."""
        rng = self._generator(data)
        if rng.random() >= self.probability:
            return data
        count = int(rng.integers(1, self.max_count + 1))
        n = int(data.num_nodes)
        for key, value in list(data.items()):
            if key in _GRAPH_LEVEL or not isinstance(value, torch.Tensor) or value.dim() == 0 or value.size(0) != n:
                continue
            fill = self.br_id if key == "x" else 0
            extra = torch.full((count, *value.shape[1:]), fill, dtype=value.dtype)
            data[key] = torch.cat([value, extra])
        data.num_nodes = n + count
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(br_id={self.br_id}, probability={self.probability}, max_count={self.max_count})"
