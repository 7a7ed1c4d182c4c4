"""benchmarks/train.py, the throughput benchmark of issue 38 item 3, run small on the CPU so that it does not rot
between the GPU loans it is meant for: every model it offers trains and infers on the same batches, and PyG's
``GatedGraphConv`` baseline (``--model pyg-gated``) is PyG's layer, shaped like the data-flow GGNN."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import train as bench_train  # noqa: E402


@pytest.mark.parametrize("model", sorted(bench_train.MODELS))
def test_every_model_trains_and_infers_on_the_same_batches(model: str, tmp_path: Path) -> None:
    out = tmp_path / f"{model}.json"
    argv = ["--model", model, "--device", "cpu", "--threads", "1", "--batches", "2", "--warmup", "0"]
    threads = torch.get_num_threads()
    try:
        assert bench_train.main([*argv, "--max-nodes", "1500", "--steps", "2", "-o", str(out)]) == 0
    finally:
        torch.set_num_threads(threads)  # --threads sets the process's count
    report = json.loads(out.read_text())
    names = {"ggnn": "DataflowGGNN", "rgcn": "DataflowRGCN", "pyg-gated": "PygGatedGraphConv"}
    assert report["model"] == names[model]
    assert [r["phase"] for r in report["results"]] == ["inference", "train"]
    for result in report["results"]:
        assert result["steps"] == 2 and result["timed_batches"] == 2 and result["nodes_per_s"] > 0
    assert len(report["batch_nodes"]) == 2 and report["batch_nodes"] == sorted(report["batch_nodes"], reverse=True)


def test_the_pyg_baseline_is_pygs_gated_graph_conv_shaped_like_the_ggnn() -> None:
    from torch_geometric.data import Batch
    from torch_geometric.nn import GatedGraphConv

    model = bench_train.PygGatedGraphConv(100, steps=4)
    assert isinstance(model.conv, GatedGraphConv) and model.conv.num_layers == 4
    assert model.conv.out_channels == 34 and model.embedding.embedding_dim == 32
    # the data-flow GGNN's embedding and readout sizes; PyG's layer holds one 34 x 34 weight per step
    assert sum(p.numel() for p in model.parameters()) == 101 * 32 + 4 * 34 * 34 + 7_140 + 2 * 34 * 2 + 2
    rng = bench_train.np.random.default_rng(0)
    batch = Batch.from_data_list(bench_train.synthetic_examples(rng, 600, 100))
    logits = model(batch, num_steps=4)
    assert logits.shape == (batch.num_nodes, 2)
    model.loss(logits, batch.y).backward()
    assert model.conv.weight.grad is not None and model.embedding.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="built for 4 steps"):
        model(batch, num_steps=30)
