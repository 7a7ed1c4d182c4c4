"""The OpenCL device-mapping data set (DevMap; docs/spec/tasks.md#device-mapping,
docs/spec/tasks.md#device-mapping-table, docs/spec/graph.md#functions-and-modules,
docs/spec/datasets.md#other-data-sets).

680 OpenCL kernels-with-inputs, each run on a CPU (Intel i7-3820) and on a GPU of two platforms: AMD Tahiti 7970
(``amd``) and NVIDIA GTX 970 (``nvidia``). The label says which device was faster (``oracle``: CPU or GPU;
``devmap_label`` = 1 when the GPU was faster); the auxiliary inputs are ``transfer`` (bytes moved to the device) and
``wgsize`` (work-group size), which differ between the platforms.

Sources (a directory such as ``../shared/data/devmap``, or downloaded from the public URLs in :data:`SOURCES` with
sha256 checks by :func:`fetch_sources`, through :mod:`programl.data.download`):

* ``cgo17-{amd,nvidia}.csv``: one row per kernel-with-input, same row order in both files;
* ``task_devmap_kernels.zip``: the OpenCL sources (``kernels_cl/``);
* ``task_devmap.zip``: NCC's LLVM IR of the kernels (``kernels_ir/``, typed pointers, read by LLVM 22);
* ``devmap_clang22_manifest.csv``: per row the kernel file, NCC's IR file and the extra clang-22 flags. It is made
  by this project, not downloadable: where it is absent, :func:`derive_manifest` makes the same table from
  ProGraML's ``name2ncc_path`` rule and the flag recipe below (a test checks the two agree on all 680 rows).

Two graph variants are built per row by :func:`build_devmap`, in worker processes with a per-file timeout, atomically
and resumably, with a ``manifest.jsonl`` that records every row's outcome:

* ``clang22``: the kernel compiled by clang-22 (``-x cl -cl-std=CL1.2 -Xclang -finclude-default-header -target
  spir64 -O0 -I kernels_cl`` plus the row's flags). clang-22 wraps every kernel ``k`` in a stub that calls
  ``__clang_ocl_kern_imp_k`` (which holds the body); both functions are kept in the graph, as clang emits them.
* ``ncc``: NCC's released IR.

On disk (under ``data_dir``, e.g. ``~/.cache/programl/devmap``), in ProGraML's layout::

    src/kernels_cl/*.cl, *.h          extracted sources
    src/kernels_ir/*.ll               extracted NCC IR
    <variant>/ir/<name>.ll            clang-22's IR (clang22 only)
    <variant>/graphs_amd/<name>.ProgramGraph.pb
    <variant>/graphs_nvidia/<name>.ProgramGraph.pb
    <variant>/manifest.jsonl          one line per row: inputs, flags, content hash, status, error, seconds

where ``<name>`` is ``<benchmark>-<dataset>``. Each graph carries the graph features of
docs/spec/graph.md#functions-and-modules for its platform: ``devmap_label``, ``wgsize``, ``transfer_bytes`` (int64) and
``wgsize_log1p``, ``transfer_bytes_log1p`` (float; unlike ProGraML's ``create.py``, ``wgsize_log1p`` is computed from
``wgsize``).

Cross-validation (docs/spec/tasks.md#device-mapping): :func:`cross_validation_splits` gives the paper's rotating
80/10/10 splits of a seeded stratified 10-fold partition (fold k is the test set, fold k+1 the validation set, the rest
training); :func:`stratified_rows` a seeded stratified sample of the rows (quick looks, tests).

The modules: :mod:`~programl.data.devmap.download` (the files), :mod:`~programl.data.devmap.manifest` (the tables),
:mod:`~programl.data.devmap.build` (the graphs) and :mod:`~programl.data.devmap.splits` (cross-validation); their
public names are re-exported here.
"""

from __future__ import annotations

from programl.data.devmap.build import VARIANTS, BuildReport, DevmapData, build_devmap, devmap_features
from programl.data.devmap.download import (
    MANIFEST_FILE,
    SOURCES,
    Source,
    check_sources,
    extract_sources,
    fetch_file,
    fetch_sources,
)
from programl.data.devmap.manifest import (
    AUX_MEDIANS,
    CLANG22_BASE_FLAGS,
    PLATFORM_NAMES,
    PLATFORMS,
    DevmapRow,
    ManifestRow,
    derive_manifest,
    opencl_source,
    read_manifest,
    read_platform_csv,
)
from programl.data.devmap.splits import Split, cross_validation_splits, stratified_rows
from programl.util.fs import sha256_file

__all__ = [
    "AUX_MEDIANS",
    "CLANG22_BASE_FLAGS",
    "MANIFEST_FILE",
    "PLATFORMS",
    "PLATFORM_NAMES",
    "SOURCES",
    "VARIANTS",
    "BuildReport",
    "DevmapData",
    "DevmapRow",
    "ManifestRow",
    "Source",
    "Split",
    "build_devmap",
    "check_sources",
    "cross_validation_splits",
    "derive_manifest",
    "devmap_features",
    "extract_sources",
    "fetch_file",
    "fetch_sources",
    "opencl_source",
    "read_manifest",
    "read_platform_csv",
    "sha256_file",
    "stratified_rows",
]
