"""Tests of programl.data.graph_pack: packs give back exactly the tensors they were made from."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.data import Data  # noqa: E402

from programl.data.graph_pack import graph_pack_meta, load_graph_pack, save_graph_pack  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402

KEYS = ("x", "node_type", "edge_index", "edge_flow", "edge_pos", "graph_y")


def random_graph(generator: torch.Generator, nodes: int, edges: int, big: bool = False) -> Data:
    high = 70_000 if big else 40  # ids beyond 16 bits take a wider column
    return Data(
        x=torch.randint(0, high, (nodes,), generator=generator),
        node_type=torch.randint(0, 3, (nodes,), generator=generator),
        edge_index=torch.randint(0, nodes, (2, edges), generator=generator),
        edge_flow=torch.randint(0, 3, (edges,), generator=generator),
        edge_pos=torch.randint(0, 300, (edges,), generator=generator),
        graph_y=torch.tensor([int(torch.randint(1, 105, (1,), generator=generator))]),
    )


def test_round_trip_gives_back_equal_int64_tensors(tmp_path) -> None:
    generator = torch.Generator().manual_seed(0)
    splits = {
        "train": [random_graph(generator, n, e) for n, e in ((5, 7), (1, 0), (300, 600))],
        "val": [random_graph(generator, 9, 12, big=True)],
        "legacy": [],
    }
    texts = ["a", "b", "ü"]
    save_graph_pack(tmp_path / "p.npz", splits, texts, {"task": "t", "n": 3})
    loaded, loaded_texts, meta = load_graph_pack(tmp_path / "p.npz")
    assert loaded_texts == texts and meta == {"task": "t", "n": 3} == graph_pack_meta(tmp_path / "p.npz")
    assert list(loaded) == ["train", "val", "legacy"] and loaded["legacy"] == []
    for name, graphs in splits.items():
        assert len(loaded[name]) == len(graphs)
        for original, copy in zip(graphs, loaded[name]):
            assert copy.num_nodes == original.num_nodes
            for key in KEYS:
                assert copy[key].dtype == torch.int64, key
                assert torch.equal(copy[key], original[key]), key


def test_a_pack_is_smaller_than_int64(tmp_path) -> None:
    generator = torch.Generator().manual_seed(1)
    graphs = [random_graph(generator, 200, 400) for _ in range(20)]
    path = save_graph_pack(tmp_path / "p.npz", {"train": graphs}, [], {})
    int64_bytes = sum(8 * (2 * d.num_nodes + 4 * d.edge_index.shape[1] + 1) for d in graphs)
    assert path.stat().st_size < int64_bytes / 3


@pytest.mark.parametrize(
    ("content", "why"), [(b"", "not an .npz file"), (b"junk\n", "not an .npz file"), (b"PK\x03\x04broken", "")]
)
def test_a_damaged_pack_is_one_line(tmp_path, content, why) -> None:
    path = tmp_path / "p.npz"
    path.write_bytes(content)
    with pytest.raises(ProgramlError, match=f"p.npz: not a readable graph pack \\({why}") as error:
        load_graph_pack(path)
    assert "\n" not in str(error.value)


def test_an_npz_that_is_no_pack_is_one_line(tmp_path) -> None:
    import numpy as np

    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(ProgramlError, match="other.npz: not a readable graph pack"):
        load_graph_pack(tmp_path / "other.npz")


def test_a_missing_pack_is_one_line(tmp_path) -> None:
    with pytest.raises(ProgramlError, match="not a readable graph pack"):
        load_graph_pack(tmp_path / "absent.npz")
