"""Data for learning: vocabulary, the DeepDataFlow builder and downloads (docs/spec/models.md#vocabulary,
docs/spec/design.md#package-layout, docs/spec/datasets.md#builds). The PyG data sets of the three tasks are in
:mod:`programl.datasets`, their node-budget batches in :mod:`programl.loader`.

Names are resolved lazily, so ``from programl.data import Vocabulary`` does not import torch.
"""

from __future__ import annotations

from programl.util.lazy import lazy_getattr

# public name -> module that defines it
_EXPORTS = {
    "CoverageReport": "programl.data.vocabulary",
    "Vocabulary": "programl.data.vocabulary",
    "build_vocabulary": "programl.data.vocabulary",
    "load_vocabulary": "programl.data.vocabulary",
    "save_vocabulary": "programl.data.vocabulary",
    "vocabulary_coverage": "programl.data.vocabulary",
    "download_url": "programl.data.download",
    "fetch": "programl.data.download",
    "sha256_file": "programl.util.fs",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(globals(), _EXPORTS)


def __dir__() -> list[str]:
    return __all__
