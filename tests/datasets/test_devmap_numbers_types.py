"""DevMap(numbers_and_types=True): x_num / x_type in a processed file of their own (issue 40 item 2)."""

from __future__ import annotations

from pathlib import Path

import torch

from programl.datasets import DevMap


def test_devmap_numbers_and_types(shared_data: Path, tmp_path: Path) -> None:
    mirror = [shared_data / "devmap"]
    plain = DevMap(tmp_path / "devmap", "amd", "ncc", rows=range(6), mirrors=mirror, jobs=1, log=False)
    rich = DevMap(
        tmp_path / "devmap", "amd", "ncc", rows=range(6), mirrors=mirror, jobs=1, log=False, numbers_and_types=True
    )
    assert plain.processed_file_names != rich.processed_file_names
    assert "x_num" not in plain[0]
    for a, b in zip(plain, rich):
        for key in ("x", "edge_index", "edge_flow", "node_type", "y", "graph_x"):
            assert torch.equal(a[key], b[key]), key
        assert b.x_num.shape == (b.num_nodes, 10) and b.x_type.shape == (b.num_nodes, 6)
    assert sum(int((d.x_num[:, 0] > 0).sum()) for d in rich) > 0
    assert plain.texts == rich.texts
    assert rich[0].x_num.dtype == torch.int32 and rich[0].x_type.dtype == torch.int32  # compact_features
