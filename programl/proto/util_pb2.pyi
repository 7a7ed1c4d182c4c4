from programl.proto import features_pb2 as _features_pb2
from programl.proto import program_graph_pb2 as _program_graph_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProgramGraphList(_message.Message):
    __slots__ = ("context", "graph")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    GRAPH_FIELD_NUMBER: _ClassVar[int]
    context: _features_pb2.Features
    graph: _containers.RepeatedCompositeFieldContainer[_program_graph_pb2.ProgramGraph]
    def __init__(self, context: _Optional[_Union[_features_pb2.Features, _Mapping]] = ..., graph: _Optional[_Iterable[_Union[_program_graph_pb2.ProgramGraph, _Mapping]]] = ...) -> None: ...

class ProgramGraphOptions(_message.Message):
    __slots__ = ("instructions_only", "ignore_call_returns", "strict", "opt_level", "ir_path")
    INSTRUCTIONS_ONLY_FIELD_NUMBER: _ClassVar[int]
    IGNORE_CALL_RETURNS_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    OPT_LEVEL_FIELD_NUMBER: _ClassVar[int]
    IR_PATH_FIELD_NUMBER: _ClassVar[int]
    instructions_only: bool
    ignore_call_returns: bool
    strict: bool
    opt_level: int
    ir_path: str
    def __init__(self, instructions_only: bool = ..., ignore_call_returns: bool = ..., strict: bool = ..., opt_level: _Optional[int] = ..., ir_path: _Optional[str] = ...) -> None: ...

class ProgramGraphFeatures(_message.Message):
    __slots__ = ("node_features", "edge_features", "function_features", "module_features", "features")
    NODE_FEATURES_FIELD_NUMBER: _ClassVar[int]
    EDGE_FEATURES_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FEATURES_FIELD_NUMBER: _ClassVar[int]
    MODULE_FEATURES_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    node_features: _features_pb2.FeatureLists
    edge_features: _features_pb2.FeatureLists
    function_features: _features_pb2.FeatureLists
    module_features: _features_pb2.FeatureLists
    features: _features_pb2.Features
    def __init__(self, node_features: _Optional[_Union[_features_pb2.FeatureLists, _Mapping]] = ..., edge_features: _Optional[_Union[_features_pb2.FeatureLists, _Mapping]] = ..., function_features: _Optional[_Union[_features_pb2.FeatureLists, _Mapping]] = ..., module_features: _Optional[_Union[_features_pb2.FeatureLists, _Mapping]] = ..., features: _Optional[_Union[_features_pb2.Features, _Mapping]] = ...) -> None: ...

class ProgramGraphFeaturesList(_message.Message):
    __slots__ = ("context", "graph")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    GRAPH_FIELD_NUMBER: _ClassVar[int]
    context: _features_pb2.Features
    graph: _containers.RepeatedCompositeFieldContainer[ProgramGraphFeatures]
    def __init__(self, context: _Optional[_Union[_features_pb2.Features, _Mapping]] = ..., graph: _Optional[_Iterable[_Union[ProgramGraphFeatures, _Mapping]]] = ...) -> None: ...

class Ir(_message.Message):
    __slots__ = ("type", "compiler_version", "cmd", "text")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[Ir.Type]
        LLVM: _ClassVar[Ir.Type]
        XLA_HLO: _ClassVar[Ir.Type]
    UNKNOWN: Ir.Type
    LLVM: Ir.Type
    XLA_HLO: Ir.Type
    TYPE_FIELD_NUMBER: _ClassVar[int]
    COMPILER_VERSION_FIELD_NUMBER: _ClassVar[int]
    CMD_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    type: Ir.Type
    compiler_version: int
    cmd: str
    text: str
    def __init__(self, type: _Optional[_Union[Ir.Type, str]] = ..., compiler_version: _Optional[int] = ..., cmd: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class IrList(_message.Message):
    __slots__ = ("ir",)
    IR_FIELD_NUMBER: _ClassVar[int]
    ir: _containers.RepeatedCompositeFieldContainer[Ir]
    def __init__(self, ir: _Optional[_Iterable[_Union[Ir, _Mapping]]] = ...) -> None: ...

class SourceFile(_message.Message):
    __slots__ = ("relpath", "language", "text")
    class Language(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[SourceFile.Language]
        C: _ClassVar[SourceFile.Language]
        CXX: _ClassVar[SourceFile.Language]
        OPENCL: _ClassVar[SourceFile.Language]
        SWIFT: _ClassVar[SourceFile.Language]
        HASKELL: _ClassVar[SourceFile.Language]
        FORTRAN: _ClassVar[SourceFile.Language]
    UNKNOWN: SourceFile.Language
    C: SourceFile.Language
    CXX: SourceFile.Language
    OPENCL: SourceFile.Language
    SWIFT: SourceFile.Language
    HASKELL: SourceFile.Language
    FORTRAN: SourceFile.Language
    RELPATH_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    relpath: str
    language: SourceFile.Language
    text: str
    def __init__(self, relpath: _Optional[str] = ..., language: _Optional[_Union[SourceFile.Language, str]] = ..., text: _Optional[str] = ...) -> None: ...

class Repo(_message.Message):
    __slots__ = ("url", "sha1", "created_ms_timestamp")
    URL_FIELD_NUMBER: _ClassVar[int]
    SHA1_FIELD_NUMBER: _ClassVar[int]
    CREATED_MS_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    url: str
    sha1: str
    created_ms_timestamp: int
    def __init__(self, url: _Optional[str] = ..., sha1: _Optional[str] = ..., created_ms_timestamp: _Optional[int] = ...) -> None: ...

class NodeIndexList(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, node: _Optional[_Iterable[int]] = ...) -> None: ...
