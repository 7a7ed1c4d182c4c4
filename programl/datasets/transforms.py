"""Vocabulary encoding as a PyG transform, and the text tables of processed data sets (SPEC §5, §6.6; issue 10).

The data sets of :mod:`programl.datasets` store node texts as ids into the data set's own text table
(``dataset.texts``: every distinct node text of the processed data, in first-seen order; id ``len(texts)`` is
unknown). Which vocabulary a model embeds is a choice of the task (the training split's count-ordered vocabulary for
POJ-104 and devmap, SPEC §6.5/§6.6; the data set's ``vocab/programl.csv`` for DeepDataFlow), so it is applied as a
transform: :class:`EncodeVocabulary` maps the ids of ``data.x`` through ``texts`` to a
:class:`~programl.data.vocabulary.Vocabulary` (unknown texts -> its OOV id ``len(vocabulary)``).

Example::

    train = POJ104(root, split="train")
    vocabulary = train.vocabulary()          # count-ordered, from the training graphs
    encode = EncodeVocabulary(vocabulary, train.texts)
    train.transform = encode                 # or POJ104(root, split="val", transform=encode)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from programl.data.vocabulary import Vocabulary

__all__ = ["EncodeVocabulary", "TextTable", "count_vocabulary", "split_vocabulary"]


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


def count_vocabulary(texts: Sequence[str], ids: Iterable[torch.Tensor]) -> Vocabulary:
    """The count-ordered :class:`Vocabulary` of the node texts ``texts[i]`` for every id ``i`` in ``ids``."""
    counts = np.zeros(len(texts) + 1, dtype=np.int64)
    for x in ids:
        counts += np.bincount(np.asarray(x, dtype=np.int64), minlength=len(texts) + 1)[: len(texts) + 1]
    return Vocabulary.from_counts({t: int(c) for t, c in zip(texts, counts[: len(texts)]) if c > 0})


def split_sizes(dataset) -> np.ndarray:
    """Node count of every example an ``InMemoryDataset`` view selects (in its order), for node-budget batching."""
    counts = np.diff(dataset.slices["x"].numpy())
    return counts[np.asarray(dataset.indices(), dtype=np.int64)]


def split_vocabulary(dataset) -> Vocabulary:
    """:func:`count_vocabulary` of the examples an ``InMemoryDataset`` view selects (its ``indices()``), read from
    the stored ids (before any transform)."""
    x, ptr = dataset._data.x, dataset.slices["x"]
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
