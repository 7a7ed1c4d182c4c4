"""What the POJ-104 data set knows without torch: its 104 classes, the 8 optimisation settings, the compiler recipes
and how a program is compiled as its graphs were. :class:`programl.datasets.POJ104` holds each as a class attribute
(``POJ104.NUM_CLASSES``, ``POJ104.compile_program``); the classifyapp task's spec reads them here, so that its
options, ``programl predict classifyapp`` and the model cards need no torch.
"""

from __future__ import annotations

from programl.data.poj104 import (
    NUM_CLASSES,
    OPT_SETTINGS,
    RECIPES,
    canonical_settings,
    compile_program,
    distinct_eval_settings,
)

__all__ = [
    "NUM_CLASSES",
    "OPT_SETTINGS",
    "RECIPES",
    "canonical_settings",
    "compile_program",
    "distinct_eval_settings",
]
