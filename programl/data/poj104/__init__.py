"""The POJ-104 algorithm-classification data set (classifyapp; docs/spec/tasks.md#algorithm-classification,
docs/spec/tasks.md#poj-104-table, docs/spec/datasets.md#other-data-sets, docs/spec/graph.md#functions-and-modules
features).

104 classes of student programs (Mou et al., AAAI 2016), one C/C++ program per file: ``codexglue/<label>/<n>.cpp``
in ``poj104.tar.xz`` (``../shared/data/poj104``), or an extracted ``codexglue/`` directory.

Programs (:func:`read_programs`) are deduplicated by content: classes 65 and 81 hold every program twice; a text that
occurs under two different labels (5 texts) is ambiguous and left out. Each keeps the id ``<label>.<n>`` of its
first file (lowest ``n``).

Compilation (:func:`compile_program`) follows ProGraML's ``poj104.cc``: a fixed header of includes,
``#define LEN 512``, ``#define MAX_LENGTH 512`` and ``using namespace std;`` is prepended, ``void main`` becomes
``int main``, and clang-22 compiles C++11 at one of the 8 optimisation settings (``-O0``..``-O3``, each with and
without ``-ffast-math``; index i as ProGraML's ``<label>.<srcId>.<i>``). About 96 % of the programs compile so; two
fallback recipes lift that (PROVENANCE): the header plus ``<iomanip>`` and ``<string>`` in C++11, then in GNU++98.
This project also gives an implicit-int ``main(`` an ``int`` (old C style, rejected by C++). The manifest records
which recipe compiled each program. Each recipe's header is precompiled once per flag set (a clang PCH), which
makes a compile about 8x faster and gives the same IR as prepending the header text (a test checks it).

On disk (``data_dir``: the build directory of :class:`programl.datasets.POJ104`, ``<root>/processed/build``;
:func:`build_poj104` is resumable, atomic, parallel with a per-program timeout, and never stops on a bad program)::

    pch/<recipe>.<flags-hash>.pch           precompiled headers
    graphs/<label>.<n>.<i>.ProgramGraph.pb  graph feature ``poj104_label`` = label (1..104)
    ir/<label>.<n>.<i>.ll                   the IR (only with ``keep_ir``)
    manifest.jsonl                          per program and setting: recipe, content hash, status, error, timings
    legacy/graphs/<file>.ProgramGraph.pb    the 1,000 labelled legacy IR files (``legacy_ir``), their manifest

Split (:func:`split_programs`): seeded, per class 3:1:1 (train/val/test) by program, so that every setting of a
program lands in the same split. :func:`subset_split` takes the first programs of each class and split, keeping a
subset's test programs inside the full test split.

The modules: :mod:`~programl.data.poj104.download` (the programs), :mod:`~programl.data.poj104.compile` (the
recipes), :mod:`~programl.data.poj104.build` (the graphs), :mod:`~programl.data.poj104.splits` (the split) and
:mod:`~programl.data.poj104.legacy` (the legacy IR); their public names are re-exported here.
"""

from __future__ import annotations

from programl.data.poj104.build import BuildReport, build_poj104, graph_name, poj104_examples
from programl.data.poj104.compile import (
    HEADER,
    OPT_SETTINGS,
    RECIPES,
    Recipe,
    compile_program,
    precompile_headers,
    prepare_source,
)
from programl.data.poj104.download import (
    ARCHIVE,
    ARCHIVE_SHA256,
    CONTENT_SHA256,
    NUM_CLASSES,
    REPOSITORY_URL,
    Program,
    fetch_poj104,
    read_programs,
)
from programl.data.poj104.legacy import (
    LEGACY_ARCHIVE,
    LEGACY_SHA256,
    LEGACY_URL,
    build_legacy,
    fetch_legacy,
    legacy_examples,
    read_legacy_ir,
)
from programl.data.poj104.splits import (
    canonical_settings,
    distinct_eval_settings,
    load_split,
    split_programs,
    subset_split,
)

__all__ = [
    "ARCHIVE",
    "ARCHIVE_SHA256",
    "CONTENT_SHA256",
    "HEADER",
    "LEGACY_ARCHIVE",
    "LEGACY_SHA256",
    "LEGACY_URL",
    "NUM_CLASSES",
    "OPT_SETTINGS",
    "RECIPES",
    "REPOSITORY_URL",
    "BuildReport",
    "Program",
    "Recipe",
    "build_legacy",
    "build_poj104",
    "canonical_settings",
    "compile_program",
    "distinct_eval_settings",
    "fetch_legacy",
    "fetch_poj104",
    "graph_name",
    "legacy_examples",
    "load_split",
    "poj104_examples",
    "precompile_headers",
    "prepare_source",
    "read_legacy_ir",
    "read_programs",
    "split_programs",
    "subset_split",
]
