"""What the DevMap data set knows without torch: its platforms and their names, the clang-22 flags of its kernels and
the medians of its auxiliary inputs. :class:`programl.datasets.DevMap` holds each as a class attribute
(``DevMap.PLATFORM_NAMES``); the devmap task's spec reads them here, so that ``programl --help``, ``programl predict
devmap`` and the model cards need no torch.
"""

from __future__ import annotations

from programl.data.devmap import AUX_MEDIANS, CLANG22_BASE_FLAGS, PLATFORM_NAMES, PLATFORMS

__all__ = ["AUX_MEDIANS", "CLANG22_BASE_FLAGS", "PLATFORMS", "PLATFORM_NAMES"]
