"""Label records (SPEC §2.5): canonical bytes, and decoding of records written by other tools."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from hypothesis import given, settings
from hypothesis import strategies as st

from programl.dataflow import (
    AnalysisResult,
    arrays_to_labels,
    labels_to_arrays,
    labels_to_bytes,
    load_labels,
    save_labels,
)
from programl.exceptions import AnalysisError
from programl.proto import Feature, ProgramGraphFeatures, ProgramGraphFeaturesList

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "dataflow_labels.pbtxt"


@st.composite
def results(draw):
    n = draw(st.integers(1, 40))
    r = draw(st.integers(1, 5))
    roots = draw(st.lists(st.integers(0, n - 1), min_size=r, max_size=r))
    labels = draw(st.lists(st.lists(st.integers(0, 1), min_size=n, max_size=n), min_size=r, max_size=r))
    big = st.integers(0, 2**63 - 1)
    return AnalysisResult(
        analysis=None,
        roots=np.asarray(roots, dtype=np.int64),
        labels=np.asarray(labels, dtype=np.uint8).reshape(r, n),
        step_counts=np.asarray(draw(st.lists(big, min_size=r, max_size=r)), dtype=np.int64),
        active_node_counts=np.asarray(draw(st.lists(big, min_size=r, max_size=r)), dtype=np.int64),
    )


def _with_protobuf_api(result: AnalysisResult) -> ProgramGraphFeaturesList:
    """The same records built message by message, features inserted the way the reference's C++ does."""
    out = ProgramGraphFeaturesList()
    for k in range(len(result)):
        g: ProgramGraphFeatures = out.graph.add()
        for i in range(result.num_nodes):
            root = g.node_features.feature_list["data_flow_root_node"].feature.add()
            root.int64_list.value.append(int(i == result.roots[k]))
            g.node_features.feature_list["data_flow_value"].feature.add().int64_list.value.append(
                int(result.labels[k, i])
            )
        g.features.feature["data_flow_step_count"].int64_list.value.append(int(result.step_counts[k]))
        g.features.feature["data_flow_active_node_count"].int64_list.value.append(int(result.active_node_counts[k]))
    return out


@settings(max_examples=100, deadline=None)
@given(results())
def test_bytes_are_canonical_and_round_trip(result):
    data = labels_to_bytes(result)
    built = _with_protobuf_api(result)
    assert data == built.SerializeToString(deterministic=True)
    assert data == arrays_to_labels(result).SerializeToString(deterministic=True)
    assert labels_to_arrays(data) == result
    assert labels_to_arrays(built.SerializeToString()) == result  # map order as the writer left it
    assert labels_to_arrays(built) == result


def test_text_format_fixture_decodes():
    message = text_format.Parse(FIXTURE.read_text(), ProgramGraphFeaturesList())
    r = labels_to_arrays(message, analysis="reachability")
    assert r.analysis == "reachability"
    assert r.roots.tolist() == [1, 2]
    assert r.labels.tolist() == [[0, 1, 1], [0, 0, 1]]
    assert r.step_counts.tolist() == [2, 300] and r.active_node_counts.tolist() == [2, 1]
    assert r.root_mask().tolist() == [[0, 1, 0], [0, 0, 1]]


def _field(number: int, payload: bytes) -> bytes:
    length, out = len(payload), bytearray([number << 3 | 2])
    while length >= 0x80:
        out.append(length & 0x7F | 0x80)
        length >>= 7
    out.append(length)
    return bytes(out) + payload


def test_unpacked_and_oddly_encoded_values_decode():
    # Int64List.value written unpacked (wire type 0) and a two-byte varint: the slow general path
    one = _field(3, bytes([0x08, 0x01]))  # Feature{int64_list{value: 1 (unpacked)}}
    zero = _field(3, bytes([0x08, 0x00]))

    def entry(key, payload):
        return _field(1, _field(1, key.encode()) + _field(2, payload))

    def feature_list(features):
        return b"".join(_field(1, f) for f in features)

    lists = entry("data_flow_root_node", feature_list([zero, one])) + entry("data_flow_value", feature_list([one, one]))
    scalars = entry("data_flow_step_count", _field(3, bytes([0x08, 0xAC, 0x02]))) + entry(
        "data_flow_active_node_count", _field(3, bytes([0x08, 0x02]))
    )
    data = _field(2, _field(1, lists) + _field(5, scalars))
    message = ProgramGraphFeaturesList.FromString(data)
    assert message.graph[0].features.feature["data_flow_step_count"].int64_list.value[0] == 300
    r = labels_to_arrays(data)
    assert r.roots.tolist() == [1] and r.labels.tolist() == [[1, 1]]
    assert r.step_counts.tolist() == [300] and r.active_node_counts.tolist() == [2]
    assert labels_to_arrays(message) == r


def test_empty_list_decodes_to_no_records():
    r = labels_to_arrays(b"")
    assert len(r) == 0 and r.labels.shape == (0, 0)


def test_missing_feature_is_an_error():
    message = ProgramGraphFeaturesList()
    g = message.graph.add()
    g.node_features.feature_list["data_flow_value"].feature.add().int64_list.value.append(1)
    with pytest.raises(AnalysisError, match="lacks data_flow_root_node"):
        labels_to_arrays(message)


def test_two_roots_is_an_error():
    message = text_format.Parse(FIXTURE.read_text(), ProgramGraphFeaturesList())
    feature = message.graph[0].node_features.feature_list["data_flow_root_node"].feature[2]
    feature.CopyFrom(Feature(int64_list={"value": [1]}))
    with pytest.raises(AnalysisError, match="2 root nodes"):
        labels_to_arrays(message)


def test_save_and_load(tmp_path):
    message = text_format.Parse(FIXTURE.read_text(), ProgramGraphFeaturesList())
    result = labels_to_arrays(message)
    path = save_labels(tmp_path / "x.ProgramGraphFeaturesList.pb", result)
    assert path.read_bytes() == labels_to_bytes(result)
    assert load_labels(path) == result
