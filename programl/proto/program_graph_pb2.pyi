from programl.proto import features_pb2 as _features_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProgramGraph(_message.Message):
    __slots__ = ("node", "edge", "function", "module", "features")
    NODE_FIELD_NUMBER: _ClassVar[int]
    EDGE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    MODULE_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    node: _containers.RepeatedCompositeFieldContainer[Node]
    edge: _containers.RepeatedCompositeFieldContainer[Edge]
    function: _containers.RepeatedCompositeFieldContainer[Function]
    module: _containers.RepeatedCompositeFieldContainer[Module]
    features: _features_pb2.Features
    def __init__(self, node: _Optional[_Iterable[_Union[Node, _Mapping]]] = ..., edge: _Optional[_Iterable[_Union[Edge, _Mapping]]] = ..., function: _Optional[_Iterable[_Union[Function, _Mapping]]] = ..., module: _Optional[_Iterable[_Union[Module, _Mapping]]] = ..., features: _Optional[_Union[_features_pb2.Features, _Mapping]] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("type", "text", "function", "block", "features")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        INSTRUCTION: _ClassVar[Node.Type]
        VARIABLE: _ClassVar[Node.Type]
        CONSTANT: _ClassVar[Node.Type]
        TYPE: _ClassVar[Node.Type]
    INSTRUCTION: Node.Type
    VARIABLE: Node.Type
    CONSTANT: Node.Type
    TYPE: Node.Type
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    type: Node.Type
    text: str
    function: int
    block: int
    features: _features_pb2.Features
    def __init__(self, type: _Optional[_Union[Node.Type, str]] = ..., text: _Optional[str] = ..., function: _Optional[int] = ..., block: _Optional[int] = ..., features: _Optional[_Union[_features_pb2.Features, _Mapping]] = ...) -> None: ...

class Edge(_message.Message):
    __slots__ = ("flow", "position", "source", "target", "features")
    class Flow(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        CONTROL: _ClassVar[Edge.Flow]
        DATA: _ClassVar[Edge.Flow]
        CALL: _ClassVar[Edge.Flow]
        TYPE: _ClassVar[Edge.Flow]
    CONTROL: Edge.Flow
    DATA: Edge.Flow
    CALL: Edge.Flow
    TYPE: Edge.Flow
    FLOW_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    flow: Edge.Flow
    position: int
    source: int
    target: int
    features: _features_pb2.Features
    def __init__(self, flow: _Optional[_Union[Edge.Flow, str]] = ..., position: _Optional[int] = ..., source: _Optional[int] = ..., target: _Optional[int] = ..., features: _Optional[_Union[_features_pb2.Features, _Mapping]] = ...) -> None: ...

class Function(_message.Message):
    __slots__ = ("name", "module", "features")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MODULE_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    name: str
    module: int
    features: _features_pb2.Features
    def __init__(self, name: _Optional[str] = ..., module: _Optional[int] = ..., features: _Optional[_Union[_features_pb2.Features, _Mapping]] = ...) -> None: ...

class Module(_message.Message):
    __slots__ = ("name", "features")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    name: str
    features: _features_pb2.Features
    def __init__(self, name: _Optional[str] = ..., features: _Optional[_Union[_features_pb2.Features, _Mapping]] = ...) -> None: ...
