"""studies/devmap_peers.py and studies/ir2vec_embed.py (issue 40, item 1): IR2Vec embeds what it can read,
reports a file it cannot read (file and reason) without ending the run, caches each result on disk and resumes;
the IR2Vec paper's classifier scales on the training rows only and learns; PERFOGRAPH's splits are 90/10."""

from __future__ import annotations

import importlib.util
import runpy
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

for module in ("ir2vec", "xgboost", "sklearn"):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[baselines]')", allow_module_level=True)
CLANG14 = shutil.which("clang-14")
if CLANG14 is None:
    pytest.skip("clang-14 is not on the PATH (scripts/ensure-apt.sh --optional clang-14)", allow_module_level=True)

BENCHMARKS = Path(__file__).resolve().parents[1]
EMBED = runpy.run_path(str(BENCHMARKS / "ir2vec_embed.py"))
PEERS = runpy.run_path(str(BENCHMARKS / "devmap_peers.py"))

KERNELS = {
    "add.cl": "__kernel void add(__global float* a, __global const float* b) {"
    " int i = get_global_id(0); a[i] += b[i]; }",
    "loop.cl": "__kernel void loop(__global int* a, int n) {"
    " int s = 0; for (int i = 0; i < n; ++i) s += a[i] * i; a[get_global_id(0)] = s; }",
}


@pytest.fixture(scope="module")
def ir_files(tmp_path_factory) -> dict[str, Path]:
    """Two OpenCL kernels compiled by clang-14 (the flags of the devmap manifest) and one file that is not IR."""
    root = tmp_path_factory.mktemp("ir")
    files = {}
    for name, text in KERNELS.items():
        out = root / name.replace(".cl", ".ll")
        command = [CLANG14, "-x", "cl", "-cl-std=CL1.2", "-Xclang", "-finclude-default-header", "-target", "spir64"]
        subprocess.run([*command, "-S", "-emit-llvm", "-O0", "-", "-o", str(out)], input=text, text=True, check=True)
        files[name] = out
    files["broken"] = root / "broken.ll"
    files["broken"].write_text("define void @f( {\n")
    return files


def test_embeds_what_it_reads_and_reports_what_it_cannot(ir_files, tmp_path):
    paths = [str(ir_files["add.cl"]), str(ir_files["broken"]), str(ir_files["loop.cl"])]
    vectors, failures = EMBED["embed_files"](paths, "fa", tmp_path)
    assert set(vectors) == {paths[0], paths[2]}  # the file after the broken one was embedded by a new process
    assert all(len(v) == 300 and np.isfinite(v).all() for v in vectors.values())
    assert vectors[paths[0]] != vectors[paths[2]]
    assert list(failures) == [paths[1]]
    assert "error" in failures[paths[1]]  # LLVM's parse error, not only an exit status
    assert len(list(tmp_path.glob("ir2vec-*-fa/*.json"))) == 3  # one cache entry per file, the failure's too


def test_cache_resumes_without_recomputing(ir_files, tmp_path, monkeypatch):
    paths = [str(ir_files["add.cl"]), str(ir_files["loop.cl"])]
    first, _ = EMBED["embed_files"](paths, "sym", tmp_path)
    entries = sorted(tmp_path.glob("ir2vec-*-sym/*.json"))
    entries[0].unlink()  # as if the run had stopped before that file
    asked = []
    worker = EMBED["_run_worker"]

    def counting(mode, files):
        asked.extend(files)
        return worker(mode, files)

    monkeypatch.setitem(EMBED["embed_files"].__globals__, "_run_worker", counting)
    again, failures = EMBED["embed_files"](paths, "sym", tmp_path)
    assert len(asked) == 1  # only the missing entry was embedded again
    assert again == first and not failures


def test_symbolic_and_flow_aware_differ(ir_files, tmp_path):
    path = str(ir_files["loop.cl"])
    fa, _ = EMBED["embed_files"]([path], "fa", tmp_path)
    sym, _ = EMBED["embed_files"]([path], "sym", tmp_path)
    assert fa[path] != sym[path]


def _problem(n: int = 200):
    """GPU faster (1) when transfer is large or the embedding's first number is positive; some rows unreadable."""
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(n, 300))
    transfer = rng.uniform(0, 1e6, n)
    labels = ((transfer > 5e5) | (vectors[:, 0] > 1)).astype(int)
    vectors[:5] = np.nan  # kernels IR2Vec could not read keep their rows
    rows = [type("Row", (), {"transfer": t, "wgsize": 64})() for t in transfer]
    return PEERS["ir2vec_features"](vectors, rows), labels


def test_paper_classifier_learns_and_scales_on_training_rows_only():
    x, labels = _problem()
    assert x.shape == (200, 302)
    train, test = np.arange(150), np.arange(150, 200)
    scaled = PEERS["minmax"](x, train)
    assert np.nanmin(scaled[train]) == 0 and np.nanmax(scaled[train]) == 1
    assert np.isnan(scaled[:5, :300]).all()
    predictions = PEERS["ir2vec_predict"](x, labels, train, test, seed=0)
    assert predictions.shape == (50,)
    assert (predictions == labels[test]).mean() >= 0.85
    assert np.array_equal(predictions, PEERS["ir2vec_predict"](x, labels, train, test, seed=0))


def test_perfograph_splits_are_ten_stratified_90_10_splits():
    labels = np.array([0] * 120 + [1] * 80)
    splits = PEERS["perfograph_splits"](labels)
    assert len(splits) == 10
    for train, test in splits:
        assert len(test) == 20 and len(train) == 180
        assert not set(train) & set(test)
        assert labels[test].sum() == 8  # the classes' proportions
    assert not np.array_equal(splits[0][1], splits[1][1])
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(splits, PEERS["perfograph_splits"](labels)))
