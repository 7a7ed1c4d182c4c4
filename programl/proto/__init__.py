"""Protocol buffer messages of ProGraML (docs/spec/wire-format.md), wire-compatible with ProGraML 0.3.2.

The ``*_pb2.py`` modules beside this file are generated; regenerate them with ``make proto`` (which runs
``python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. programl/proto/*.proto`` from grpcio-tools 1.71,
i.e. protoc 29, whose output works with every protobuf runtime >= 5.29).
"""

from programl.proto.features_pb2 import (
    BytesList,
    Feature,
    FeatureList,
    FeatureLists,
    Features,
    FloatList,
    Int64List,
)
from programl.proto.program_graph_pb2 import Edge, Function, Module, Node, ProgramGraph
from programl.proto.util_pb2 import (
    Ir,
    IrList,
    NodeIndexList,
    ProgramGraphFeatures,
    ProgramGraphFeaturesList,
    ProgramGraphList,
    ProgramGraphOptions,
    Repo,
    SourceFile,
)

__all__ = [
    "BytesList",
    "Edge",
    "Feature",
    "FeatureList",
    "FeatureLists",
    "Features",
    "FloatList",
    "Function",
    "Int64List",
    "Ir",
    "IrList",
    "Module",
    "Node",
    "NodeIndexList",
    "ProgramGraph",
    "ProgramGraphFeatures",
    "ProgramGraphFeaturesList",
    "ProgramGraphList",
    "ProgramGraphOptions",
    "Repo",
    "SourceFile",
]
