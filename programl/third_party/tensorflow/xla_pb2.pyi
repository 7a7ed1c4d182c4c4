from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PrimitiveType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRIMITIVE_TYPE_INVALID: _ClassVar[PrimitiveType]
    PRED: _ClassVar[PrimitiveType]
    S8: _ClassVar[PrimitiveType]
    S16: _ClassVar[PrimitiveType]
    S32: _ClassVar[PrimitiveType]
    S64: _ClassVar[PrimitiveType]
    U8: _ClassVar[PrimitiveType]
    U16: _ClassVar[PrimitiveType]
    U32: _ClassVar[PrimitiveType]
    U64: _ClassVar[PrimitiveType]
    F16: _ClassVar[PrimitiveType]
    F32: _ClassVar[PrimitiveType]
    BF16: _ClassVar[PrimitiveType]
    F64: _ClassVar[PrimitiveType]
    C64: _ClassVar[PrimitiveType]
    C128: _ClassVar[PrimitiveType]
    TUPLE: _ClassVar[PrimitiveType]
    OPAQUE_TYPE: _ClassVar[PrimitiveType]
    TOKEN: _ClassVar[PrimitiveType]

class Format(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INVALID_FORMAT: _ClassVar[Format]
    DENSE: _ClassVar[Format]
    SPARSE: _ClassVar[Format]

class FftType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FFT: _ClassVar[FftType]
    IFFT: _ClassVar[FftType]
    RFFT: _ClassVar[FftType]
    IRFFT: _ClassVar[FftType]

class RandomDistribution(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RNG_INVALID: _ClassVar[RandomDistribution]
    RNG_UNIFORM: _ClassVar[RandomDistribution]
    RNG_NORMAL: _ClassVar[RandomDistribution]
PRIMITIVE_TYPE_INVALID: PrimitiveType
PRED: PrimitiveType
S8: PrimitiveType
S16: PrimitiveType
S32: PrimitiveType
S64: PrimitiveType
U8: PrimitiveType
U16: PrimitiveType
U32: PrimitiveType
U64: PrimitiveType
F16: PrimitiveType
F32: PrimitiveType
BF16: PrimitiveType
F64: PrimitiveType
C64: PrimitiveType
C128: PrimitiveType
TUPLE: PrimitiveType
OPAQUE_TYPE: PrimitiveType
TOKEN: PrimitiveType
INVALID_FORMAT: Format
DENSE: Format
SPARSE: Format
FFT: FftType
IFFT: FftType
RFFT: FftType
IRFFT: FftType
RNG_INVALID: RandomDistribution
RNG_UNIFORM: RandomDistribution
RNG_NORMAL: RandomDistribution

class PaddingConfig(_message.Message):
    __slots__ = ("dimensions",)
    class PaddingConfigDimension(_message.Message):
        __slots__ = ("edge_padding_low", "edge_padding_high", "interior_padding")
        EDGE_PADDING_LOW_FIELD_NUMBER: _ClassVar[int]
        EDGE_PADDING_HIGH_FIELD_NUMBER: _ClassVar[int]
        INTERIOR_PADDING_FIELD_NUMBER: _ClassVar[int]
        edge_padding_low: int
        edge_padding_high: int
        interior_padding: int
        def __init__(self, edge_padding_low: _Optional[int] = ..., edge_padding_high: _Optional[int] = ..., interior_padding: _Optional[int] = ...) -> None: ...
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedCompositeFieldContainer[PaddingConfig.PaddingConfigDimension]
    def __init__(self, dimensions: _Optional[_Iterable[_Union[PaddingConfig.PaddingConfigDimension, _Mapping]]] = ...) -> None: ...

class TileProto(_message.Message):
    __slots__ = ("dimensions",)
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class LayoutProto(_message.Message):
    __slots__ = ("format", "minor_to_major", "max_sparse_elements", "tiles", "element_size_in_bits", "memory_space")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    MINOR_TO_MAJOR_FIELD_NUMBER: _ClassVar[int]
    MAX_SPARSE_ELEMENTS_FIELD_NUMBER: _ClassVar[int]
    TILES_FIELD_NUMBER: _ClassVar[int]
    ELEMENT_SIZE_IN_BITS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SPACE_FIELD_NUMBER: _ClassVar[int]
    format: Format
    minor_to_major: _containers.RepeatedScalarFieldContainer[int]
    max_sparse_elements: int
    tiles: _containers.RepeatedCompositeFieldContainer[TileProto]
    element_size_in_bits: int
    memory_space: int
    def __init__(self, format: _Optional[_Union[Format, str]] = ..., minor_to_major: _Optional[_Iterable[int]] = ..., max_sparse_elements: _Optional[int] = ..., tiles: _Optional[_Iterable[_Union[TileProto, _Mapping]]] = ..., element_size_in_bits: _Optional[int] = ..., memory_space: _Optional[int] = ...) -> None: ...

class ShapeProto(_message.Message):
    __slots__ = ("element_type", "dimensions", "tuple_shapes", "layout", "is_dynamic_dimension")
    ELEMENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    TUPLE_SHAPES_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    IS_DYNAMIC_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    element_type: PrimitiveType
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    tuple_shapes: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    layout: LayoutProto
    is_dynamic_dimension: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, element_type: _Optional[_Union[PrimitiveType, str]] = ..., dimensions: _Optional[_Iterable[int]] = ..., tuple_shapes: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ..., layout: _Optional[_Union[LayoutProto, _Mapping]] = ..., is_dynamic_dimension: _Optional[_Iterable[bool]] = ...) -> None: ...

class ProgramShapeProto(_message.Message):
    __slots__ = ("parameters", "result", "parameter_names")
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_NAMES_FIELD_NUMBER: _ClassVar[int]
    parameters: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    result: ShapeProto
    parameter_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, parameters: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ..., result: _Optional[_Union[ShapeProto, _Mapping]] = ..., parameter_names: _Optional[_Iterable[str]] = ...) -> None: ...

class ComputationStats(_message.Message):
    __slots__ = ("flop_count", "transcendental_count")
    FLOP_COUNT_FIELD_NUMBER: _ClassVar[int]
    TRANSCENDENTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    flop_count: float
    transcendental_count: float
    def __init__(self, flop_count: _Optional[float] = ..., transcendental_count: _Optional[float] = ...) -> None: ...

class OpMetadata(_message.Message):
    __slots__ = ("op_type", "op_name", "source_file", "source_line")
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LINE_FIELD_NUMBER: _ClassVar[int]
    op_type: str
    op_name: str
    source_file: str
    source_line: int
    def __init__(self, op_type: _Optional[str] = ..., op_name: _Optional[str] = ..., source_file: _Optional[str] = ..., source_line: _Optional[int] = ...) -> None: ...

class ExecutionProfile(_message.Message):
    __slots__ = ("compilation_cache_hit", "compile_time_ms", "compute_cycle_count", "compute_time_ns", "compute_and_transfer_time_ns", "executable_size_in_bytes", "profile_cache_hit")
    COMPILATION_CACHE_HIT_FIELD_NUMBER: _ClassVar[int]
    COMPILE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_CYCLE_COUNT_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_AND_TRANSFER_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    EXECUTABLE_SIZE_IN_BYTES_FIELD_NUMBER: _ClassVar[int]
    PROFILE_CACHE_HIT_FIELD_NUMBER: _ClassVar[int]
    compilation_cache_hit: bool
    compile_time_ms: int
    compute_cycle_count: int
    compute_time_ns: int
    compute_and_transfer_time_ns: int
    executable_size_in_bytes: int
    profile_cache_hit: bool
    def __init__(self, compilation_cache_hit: bool = ..., compile_time_ms: _Optional[int] = ..., compute_cycle_count: _Optional[int] = ..., compute_time_ns: _Optional[int] = ..., compute_and_transfer_time_ns: _Optional[int] = ..., executable_size_in_bytes: _Optional[int] = ..., profile_cache_hit: bool = ...) -> None: ...

class ExecutionHandle(_message.Message):
    __slots__ = ("handle",)
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    handle: int
    def __init__(self, handle: _Optional[int] = ...) -> None: ...

class GlobalDataHandle(_message.Message):
    __slots__ = ("handle",)
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    handle: int
    def __init__(self, handle: _Optional[int] = ...) -> None: ...

class DeviceHandle(_message.Message):
    __slots__ = ("handle", "device_count")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COUNT_FIELD_NUMBER: _ClassVar[int]
    handle: int
    device_count: int
    def __init__(self, handle: _Optional[int] = ..., device_count: _Optional[int] = ...) -> None: ...

class ChannelHandle(_message.Message):
    __slots__ = ("handle", "type")
    class ChannelType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        CHANNEL_TYPE_INVALID: _ClassVar[ChannelHandle.ChannelType]
        DEVICE_TO_DEVICE: _ClassVar[ChannelHandle.ChannelType]
        DEVICE_TO_HOST: _ClassVar[ChannelHandle.ChannelType]
        HOST_TO_DEVICE: _ClassVar[ChannelHandle.ChannelType]
    CHANNEL_TYPE_INVALID: ChannelHandle.ChannelType
    DEVICE_TO_DEVICE: ChannelHandle.ChannelType
    DEVICE_TO_HOST: ChannelHandle.ChannelType
    HOST_TO_DEVICE: ChannelHandle.ChannelType
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    handle: int
    type: ChannelHandle.ChannelType
    def __init__(self, handle: _Optional[int] = ..., type: _Optional[_Union[ChannelHandle.ChannelType, str]] = ...) -> None: ...

class DeviceAssignmentProto(_message.Message):
    __slots__ = ("replica_count", "computation_count", "computation_devices")
    class ComputationDevice(_message.Message):
        __slots__ = ("replica_device_ids",)
        REPLICA_DEVICE_IDS_FIELD_NUMBER: _ClassVar[int]
        replica_device_ids: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, replica_device_ids: _Optional[_Iterable[int]] = ...) -> None: ...
    REPLICA_COUNT_FIELD_NUMBER: _ClassVar[int]
    COMPUTATION_COUNT_FIELD_NUMBER: _ClassVar[int]
    COMPUTATION_DEVICES_FIELD_NUMBER: _ClassVar[int]
    replica_count: int
    computation_count: int
    computation_devices: _containers.RepeatedCompositeFieldContainer[DeviceAssignmentProto.ComputationDevice]
    def __init__(self, replica_count: _Optional[int] = ..., computation_count: _Optional[int] = ..., computation_devices: _Optional[_Iterable[_Union[DeviceAssignmentProto.ComputationDevice, _Mapping]]] = ...) -> None: ...

class LiteralProto(_message.Message):
    __slots__ = ("shape", "preds", "s8s", "u8s", "s32s", "s64s", "u32s", "u64s", "f32s", "f64s", "c64s", "c128s", "tuple_literals", "f16s", "bf16s", "u16s", "s16s", "sparse_indices")
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    PREDS_FIELD_NUMBER: _ClassVar[int]
    S8S_FIELD_NUMBER: _ClassVar[int]
    U8S_FIELD_NUMBER: _ClassVar[int]
    S32S_FIELD_NUMBER: _ClassVar[int]
    S64S_FIELD_NUMBER: _ClassVar[int]
    U32S_FIELD_NUMBER: _ClassVar[int]
    U64S_FIELD_NUMBER: _ClassVar[int]
    F32S_FIELD_NUMBER: _ClassVar[int]
    F64S_FIELD_NUMBER: _ClassVar[int]
    C64S_FIELD_NUMBER: _ClassVar[int]
    C128S_FIELD_NUMBER: _ClassVar[int]
    TUPLE_LITERALS_FIELD_NUMBER: _ClassVar[int]
    F16S_FIELD_NUMBER: _ClassVar[int]
    BF16S_FIELD_NUMBER: _ClassVar[int]
    U16S_FIELD_NUMBER: _ClassVar[int]
    S16S_FIELD_NUMBER: _ClassVar[int]
    SPARSE_INDICES_FIELD_NUMBER: _ClassVar[int]
    shape: ShapeProto
    preds: _containers.RepeatedScalarFieldContainer[bool]
    s8s: bytes
    u8s: bytes
    s32s: _containers.RepeatedScalarFieldContainer[int]
    s64s: _containers.RepeatedScalarFieldContainer[int]
    u32s: _containers.RepeatedScalarFieldContainer[int]
    u64s: _containers.RepeatedScalarFieldContainer[int]
    f32s: _containers.RepeatedScalarFieldContainer[float]
    f64s: _containers.RepeatedScalarFieldContainer[float]
    c64s: _containers.RepeatedScalarFieldContainer[float]
    c128s: _containers.RepeatedScalarFieldContainer[float]
    tuple_literals: _containers.RepeatedCompositeFieldContainer[LiteralProto]
    f16s: bytes
    bf16s: bytes
    u16s: bytes
    s16s: bytes
    sparse_indices: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., preds: _Optional[_Iterable[bool]] = ..., s8s: _Optional[bytes] = ..., u8s: _Optional[bytes] = ..., s32s: _Optional[_Iterable[int]] = ..., s64s: _Optional[_Iterable[int]] = ..., u32s: _Optional[_Iterable[int]] = ..., u64s: _Optional[_Iterable[int]] = ..., f32s: _Optional[_Iterable[float]] = ..., f64s: _Optional[_Iterable[float]] = ..., c64s: _Optional[_Iterable[float]] = ..., c128s: _Optional[_Iterable[float]] = ..., tuple_literals: _Optional[_Iterable[_Union[LiteralProto, _Mapping]]] = ..., f16s: _Optional[bytes] = ..., bf16s: _Optional[bytes] = ..., u16s: _Optional[bytes] = ..., s16s: _Optional[bytes] = ..., sparse_indices: _Optional[_Iterable[int]] = ...) -> None: ...

class WindowDimension(_message.Message):
    __slots__ = ("size", "stride", "padding_low", "padding_high", "window_dilation", "base_dilation", "window_reversal")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    STRIDE_FIELD_NUMBER: _ClassVar[int]
    PADDING_LOW_FIELD_NUMBER: _ClassVar[int]
    PADDING_HIGH_FIELD_NUMBER: _ClassVar[int]
    WINDOW_DILATION_FIELD_NUMBER: _ClassVar[int]
    BASE_DILATION_FIELD_NUMBER: _ClassVar[int]
    WINDOW_REVERSAL_FIELD_NUMBER: _ClassVar[int]
    size: int
    stride: int
    padding_low: int
    padding_high: int
    window_dilation: int
    base_dilation: int
    window_reversal: bool
    def __init__(self, size: _Optional[int] = ..., stride: _Optional[int] = ..., padding_low: _Optional[int] = ..., padding_high: _Optional[int] = ..., window_dilation: _Optional[int] = ..., base_dilation: _Optional[int] = ..., window_reversal: bool = ...) -> None: ...

class Window(_message.Message):
    __slots__ = ("dimensions",)
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedCompositeFieldContainer[WindowDimension]
    def __init__(self, dimensions: _Optional[_Iterable[_Union[WindowDimension, _Mapping]]] = ...) -> None: ...

class GatherDimensionNumbers(_message.Message):
    __slots__ = ("offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim")
    OFFSET_DIMS_FIELD_NUMBER: _ClassVar[int]
    COLLAPSED_SLICE_DIMS_FIELD_NUMBER: _ClassVar[int]
    START_INDEX_MAP_FIELD_NUMBER: _ClassVar[int]
    INDEX_VECTOR_DIM_FIELD_NUMBER: _ClassVar[int]
    offset_dims: _containers.RepeatedScalarFieldContainer[int]
    collapsed_slice_dims: _containers.RepeatedScalarFieldContainer[int]
    start_index_map: _containers.RepeatedScalarFieldContainer[int]
    index_vector_dim: int
    def __init__(self, offset_dims: _Optional[_Iterable[int]] = ..., collapsed_slice_dims: _Optional[_Iterable[int]] = ..., start_index_map: _Optional[_Iterable[int]] = ..., index_vector_dim: _Optional[int] = ...) -> None: ...

class ScatterDimensionNumbers(_message.Message):
    __slots__ = ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "index_vector_dim")
    UPDATE_WINDOW_DIMS_FIELD_NUMBER: _ClassVar[int]
    INSERTED_WINDOW_DIMS_FIELD_NUMBER: _ClassVar[int]
    SCATTER_DIMS_TO_OPERAND_DIMS_FIELD_NUMBER: _ClassVar[int]
    INDEX_VECTOR_DIM_FIELD_NUMBER: _ClassVar[int]
    update_window_dims: _containers.RepeatedScalarFieldContainer[int]
    inserted_window_dims: _containers.RepeatedScalarFieldContainer[int]
    scatter_dims_to_operand_dims: _containers.RepeatedScalarFieldContainer[int]
    index_vector_dim: int
    def __init__(self, update_window_dims: _Optional[_Iterable[int]] = ..., inserted_window_dims: _Optional[_Iterable[int]] = ..., scatter_dims_to_operand_dims: _Optional[_Iterable[int]] = ..., index_vector_dim: _Optional[int] = ...) -> None: ...

class ConvolutionDimensionNumbers(_message.Message):
    __slots__ = ("input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", "kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions", "output_batch_dimension", "output_feature_dimension", "output_spatial_dimensions")
    INPUT_BATCH_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    KERNEL_INPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    KERNEL_OUTPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    KERNEL_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BATCH_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    input_batch_dimension: int
    input_feature_dimension: int
    input_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    kernel_input_feature_dimension: int
    kernel_output_feature_dimension: int
    kernel_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    output_batch_dimension: int
    output_feature_dimension: int
    output_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, input_batch_dimension: _Optional[int] = ..., input_feature_dimension: _Optional[int] = ..., input_spatial_dimensions: _Optional[_Iterable[int]] = ..., kernel_input_feature_dimension: _Optional[int] = ..., kernel_output_feature_dimension: _Optional[int] = ..., kernel_spatial_dimensions: _Optional[_Iterable[int]] = ..., output_batch_dimension: _Optional[int] = ..., output_feature_dimension: _Optional[int] = ..., output_spatial_dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class DotDimensionNumbers(_message.Message):
    __slots__ = ("lhs_contracting_dimensions", "rhs_contracting_dimensions", "lhs_batch_dimensions", "rhs_batch_dimensions")
    LHS_CONTRACTING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    RHS_CONTRACTING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    LHS_BATCH_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    RHS_BATCH_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    lhs_contracting_dimensions: _containers.RepeatedScalarFieldContainer[int]
    rhs_contracting_dimensions: _containers.RepeatedScalarFieldContainer[int]
    lhs_batch_dimensions: _containers.RepeatedScalarFieldContainer[int]
    rhs_batch_dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, lhs_contracting_dimensions: _Optional[_Iterable[int]] = ..., rhs_contracting_dimensions: _Optional[_Iterable[int]] = ..., lhs_batch_dimensions: _Optional[_Iterable[int]] = ..., rhs_batch_dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class TriangularSolveOptions(_message.Message):
    __slots__ = ("left_side", "lower", "unit_diagonal", "transpose_a")
    class Transpose(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TRANSPOSE_INVALID: _ClassVar[TriangularSolveOptions.Transpose]
        NO_TRANSPOSE: _ClassVar[TriangularSolveOptions.Transpose]
        TRANSPOSE: _ClassVar[TriangularSolveOptions.Transpose]
        ADJOINT: _ClassVar[TriangularSolveOptions.Transpose]
    TRANSPOSE_INVALID: TriangularSolveOptions.Transpose
    NO_TRANSPOSE: TriangularSolveOptions.Transpose
    TRANSPOSE: TriangularSolveOptions.Transpose
    ADJOINT: TriangularSolveOptions.Transpose
    LEFT_SIDE_FIELD_NUMBER: _ClassVar[int]
    LOWER_FIELD_NUMBER: _ClassVar[int]
    UNIT_DIAGONAL_FIELD_NUMBER: _ClassVar[int]
    TRANSPOSE_A_FIELD_NUMBER: _ClassVar[int]
    left_side: bool
    lower: bool
    unit_diagonal: bool
    transpose_a: TriangularSolveOptions.Transpose
    def __init__(self, left_side: bool = ..., lower: bool = ..., unit_diagonal: bool = ..., transpose_a: _Optional[_Union[TriangularSolveOptions.Transpose, str]] = ...) -> None: ...

class CholeskyOptions(_message.Message):
    __slots__ = ("lower",)
    LOWER_FIELD_NUMBER: _ClassVar[int]
    lower: bool
    def __init__(self, lower: bool = ...) -> None: ...

class OpSharding(_message.Message):
    __slots__ = ("type", "tile_shape", "tile_assignment_dimensions", "tile_assignment_devices", "tuple_shardings")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        REPLICATED: _ClassVar[OpSharding.Type]
        MAXIMAL: _ClassVar[OpSharding.Type]
        TUPLE: _ClassVar[OpSharding.Type]
        OTHER: _ClassVar[OpSharding.Type]
    REPLICATED: OpSharding.Type
    MAXIMAL: OpSharding.Type
    TUPLE: OpSharding.Type
    OTHER: OpSharding.Type
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TILE_SHAPE_FIELD_NUMBER: _ClassVar[int]
    TILE_ASSIGNMENT_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    TILE_ASSIGNMENT_DEVICES_FIELD_NUMBER: _ClassVar[int]
    TUPLE_SHARDINGS_FIELD_NUMBER: _ClassVar[int]
    type: OpSharding.Type
    tile_shape: ShapeProto
    tile_assignment_dimensions: _containers.RepeatedScalarFieldContainer[int]
    tile_assignment_devices: _containers.RepeatedScalarFieldContainer[int]
    tuple_shardings: _containers.RepeatedCompositeFieldContainer[OpSharding]
    def __init__(self, type: _Optional[_Union[OpSharding.Type, str]] = ..., tile_shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., tile_assignment_dimensions: _Optional[_Iterable[int]] = ..., tile_assignment_devices: _Optional[_Iterable[int]] = ..., tuple_shardings: _Optional[_Iterable[_Union[OpSharding, _Mapping]]] = ...) -> None: ...

class ReplicaGroup(_message.Message):
    __slots__ = ("replica_ids",)
    REPLICA_IDS_FIELD_NUMBER: _ClassVar[int]
    replica_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, replica_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class SourceTarget(_message.Message):
    __slots__ = ("source", "target")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    source: int
    target: int
    def __init__(self, source: _Optional[int] = ..., target: _Optional[int] = ...) -> None: ...

class PrecisionConfig(_message.Message):
    __slots__ = ("operand_precision",)
    class Precision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DEFAULT: _ClassVar[PrecisionConfig.Precision]
        HIGH: _ClassVar[PrecisionConfig.Precision]
        HIGHEST: _ClassVar[PrecisionConfig.Precision]
    DEFAULT: PrecisionConfig.Precision
    HIGH: PrecisionConfig.Precision
    HIGHEST: PrecisionConfig.Precision
    OPERAND_PRECISION_FIELD_NUMBER: _ClassVar[int]
    operand_precision: _containers.RepeatedScalarFieldContainer[PrecisionConfig.Precision]
    def __init__(self, operand_precision: _Optional[_Iterable[_Union[PrecisionConfig.Precision, str]]] = ...) -> None: ...

class ParameterReplication(_message.Message):
    __slots__ = ("replicated_at_leaf_buffers",)
    REPLICATED_AT_LEAF_BUFFERS_FIELD_NUMBER: _ClassVar[int]
    replicated_at_leaf_buffers: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, replicated_at_leaf_buffers: _Optional[_Iterable[bool]] = ...) -> None: ...

class WhileLoopBackendConfig(_message.Message):
    __slots__ = ("known_trip_count",)
    class KnownTripCount(_message.Message):
        __slots__ = ("n",)
        N_FIELD_NUMBER: _ClassVar[int]
        n: int
        def __init__(self, n: _Optional[int] = ...) -> None: ...
    KNOWN_TRIP_COUNT_FIELD_NUMBER: _ClassVar[int]
    known_trip_count: WhileLoopBackendConfig.KnownTripCount
    def __init__(self, known_trip_count: _Optional[_Union[WhileLoopBackendConfig.KnownTripCount, _Mapping]] = ...) -> None: ...

class HloInstructionProto(_message.Message):
    __slots__ = ("name", "opcode", "shape", "metadata", "literal", "parameter_number", "fusion_kind", "tuple_index", "dimensions", "window", "convolution_dimension_numbers", "feature_group_count", "batch_group_count", "slice_dimensions", "exponent_bits", "mantissa_bits", "dynamic_slice_sizes", "padding_config", "outfeed_config", "distribution", "epsilon", "feature_index", "channel_id", "infeed_config", "custom_call_target", "outfeed_shape", "dot_dimension_numbers", "fft_type", "fft_length", "comparison_direction", "gather_dimension_numbers", "gather_slice_sizes", "channel_name", "cost_estimate_ns", "id", "operand_ids", "control_predecessor_ids", "called_computation_ids", "sharding", "backend_config", "replica_groups", "all_reduce_id", "is_host_transfer", "is_stable", "scatter_dimension_numbers", "precision_config", "source_target_pairs", "domain_entry_sharding", "domain_exit_sharding", "constrain_layout", "operand_shapes_with_layout", "triangular_solve_options", "cholesky_options", "parameter_replication", "outer_dimension_partitions", "custom_call_has_side_effect", "delta", "indices_are_sorted")
    class SliceDimensions(_message.Message):
        __slots__ = ("start", "limit", "stride")
        START_FIELD_NUMBER: _ClassVar[int]
        LIMIT_FIELD_NUMBER: _ClassVar[int]
        STRIDE_FIELD_NUMBER: _ClassVar[int]
        start: int
        limit: int
        stride: int
        def __init__(self, start: _Optional[int] = ..., limit: _Optional[int] = ..., stride: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPCODE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    LITERAL_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_NUMBER_FIELD_NUMBER: _ClassVar[int]
    FUSION_KIND_FIELD_NUMBER: _ClassVar[int]
    TUPLE_INDEX_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    CONVOLUTION_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    FEATURE_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    BATCH_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    SLICE_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    EXPONENT_BITS_FIELD_NUMBER: _ClassVar[int]
    MANTISSA_BITS_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_SLICE_SIZES_FIELD_NUMBER: _ClassVar[int]
    PADDING_CONFIG_FIELD_NUMBER: _ClassVar[int]
    OUTFEED_CONFIG_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    FEATURE_INDEX_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    INFEED_CONFIG_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_CALL_TARGET_FIELD_NUMBER: _ClassVar[int]
    OUTFEED_SHAPE_FIELD_NUMBER: _ClassVar[int]
    DOT_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    FFT_TYPE_FIELD_NUMBER: _ClassVar[int]
    FFT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    COMPARISON_DIRECTION_FIELD_NUMBER: _ClassVar[int]
    GATHER_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    GATHER_SLICE_SIZES_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_NAME_FIELD_NUMBER: _ClassVar[int]
    COST_ESTIMATE_NS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    OPERAND_IDS_FIELD_NUMBER: _ClassVar[int]
    CONTROL_PREDECESSOR_IDS_FIELD_NUMBER: _ClassVar[int]
    CALLED_COMPUTATION_IDS_FIELD_NUMBER: _ClassVar[int]
    SHARDING_FIELD_NUMBER: _ClassVar[int]
    BACKEND_CONFIG_FIELD_NUMBER: _ClassVar[int]
    REPLICA_GROUPS_FIELD_NUMBER: _ClassVar[int]
    ALL_REDUCE_ID_FIELD_NUMBER: _ClassVar[int]
    IS_HOST_TRANSFER_FIELD_NUMBER: _ClassVar[int]
    IS_STABLE_FIELD_NUMBER: _ClassVar[int]
    SCATTER_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    PRECISION_CONFIG_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TARGET_PAIRS_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_ENTRY_SHARDING_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_EXIT_SHARDING_FIELD_NUMBER: _ClassVar[int]
    CONSTRAIN_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    OPERAND_SHAPES_WITH_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    TRIANGULAR_SOLVE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    CHOLESKY_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_REPLICATION_FIELD_NUMBER: _ClassVar[int]
    OUTER_DIMENSION_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_CALL_HAS_SIDE_EFFECT_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    INDICES_ARE_SORTED_FIELD_NUMBER: _ClassVar[int]
    name: str
    opcode: str
    shape: ShapeProto
    metadata: OpMetadata
    literal: LiteralProto
    parameter_number: int
    fusion_kind: str
    tuple_index: int
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    window: Window
    convolution_dimension_numbers: ConvolutionDimensionNumbers
    feature_group_count: int
    batch_group_count: int
    slice_dimensions: _containers.RepeatedCompositeFieldContainer[HloInstructionProto.SliceDimensions]
    exponent_bits: int
    mantissa_bits: int
    dynamic_slice_sizes: _containers.RepeatedScalarFieldContainer[int]
    padding_config: PaddingConfig
    outfeed_config: bytes
    distribution: RandomDistribution
    epsilon: float
    feature_index: int
    channel_id: int
    infeed_config: bytes
    custom_call_target: str
    outfeed_shape: ShapeProto
    dot_dimension_numbers: DotDimensionNumbers
    fft_type: FftType
    fft_length: _containers.RepeatedScalarFieldContainer[int]
    comparison_direction: str
    gather_dimension_numbers: GatherDimensionNumbers
    gather_slice_sizes: _containers.RepeatedScalarFieldContainer[int]
    channel_name: str
    cost_estimate_ns: int
    id: int
    operand_ids: _containers.RepeatedScalarFieldContainer[int]
    control_predecessor_ids: _containers.RepeatedScalarFieldContainer[int]
    called_computation_ids: _containers.RepeatedScalarFieldContainer[int]
    sharding: OpSharding
    backend_config: str
    replica_groups: _containers.RepeatedCompositeFieldContainer[ReplicaGroup]
    all_reduce_id: int
    is_host_transfer: bool
    is_stable: bool
    scatter_dimension_numbers: ScatterDimensionNumbers
    precision_config: PrecisionConfig
    source_target_pairs: _containers.RepeatedCompositeFieldContainer[SourceTarget]
    domain_entry_sharding: OpSharding
    domain_exit_sharding: OpSharding
    constrain_layout: bool
    operand_shapes_with_layout: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    triangular_solve_options: TriangularSolveOptions
    cholesky_options: CholeskyOptions
    parameter_replication: ParameterReplication
    outer_dimension_partitions: _containers.RepeatedScalarFieldContainer[int]
    custom_call_has_side_effect: bool
    delta: int
    indices_are_sorted: bool
    def __init__(self, name: _Optional[str] = ..., opcode: _Optional[str] = ..., shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., metadata: _Optional[_Union[OpMetadata, _Mapping]] = ..., literal: _Optional[_Union[LiteralProto, _Mapping]] = ..., parameter_number: _Optional[int] = ..., fusion_kind: _Optional[str] = ..., tuple_index: _Optional[int] = ..., dimensions: _Optional[_Iterable[int]] = ..., window: _Optional[_Union[Window, _Mapping]] = ..., convolution_dimension_numbers: _Optional[_Union[ConvolutionDimensionNumbers, _Mapping]] = ..., feature_group_count: _Optional[int] = ..., batch_group_count: _Optional[int] = ..., slice_dimensions: _Optional[_Iterable[_Union[HloInstructionProto.SliceDimensions, _Mapping]]] = ..., exponent_bits: _Optional[int] = ..., mantissa_bits: _Optional[int] = ..., dynamic_slice_sizes: _Optional[_Iterable[int]] = ..., padding_config: _Optional[_Union[PaddingConfig, _Mapping]] = ..., outfeed_config: _Optional[bytes] = ..., distribution: _Optional[_Union[RandomDistribution, str]] = ..., epsilon: _Optional[float] = ..., feature_index: _Optional[int] = ..., channel_id: _Optional[int] = ..., infeed_config: _Optional[bytes] = ..., custom_call_target: _Optional[str] = ..., outfeed_shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., dot_dimension_numbers: _Optional[_Union[DotDimensionNumbers, _Mapping]] = ..., fft_type: _Optional[_Union[FftType, str]] = ..., fft_length: _Optional[_Iterable[int]] = ..., comparison_direction: _Optional[str] = ..., gather_dimension_numbers: _Optional[_Union[GatherDimensionNumbers, _Mapping]] = ..., gather_slice_sizes: _Optional[_Iterable[int]] = ..., channel_name: _Optional[str] = ..., cost_estimate_ns: _Optional[int] = ..., id: _Optional[int] = ..., operand_ids: _Optional[_Iterable[int]] = ..., control_predecessor_ids: _Optional[_Iterable[int]] = ..., called_computation_ids: _Optional[_Iterable[int]] = ..., sharding: _Optional[_Union[OpSharding, _Mapping]] = ..., backend_config: _Optional[str] = ..., replica_groups: _Optional[_Iterable[_Union[ReplicaGroup, _Mapping]]] = ..., all_reduce_id: _Optional[int] = ..., is_host_transfer: bool = ..., is_stable: bool = ..., scatter_dimension_numbers: _Optional[_Union[ScatterDimensionNumbers, _Mapping]] = ..., precision_config: _Optional[_Union[PrecisionConfig, _Mapping]] = ..., source_target_pairs: _Optional[_Iterable[_Union[SourceTarget, _Mapping]]] = ..., domain_entry_sharding: _Optional[_Union[OpSharding, _Mapping]] = ..., domain_exit_sharding: _Optional[_Union[OpSharding, _Mapping]] = ..., constrain_layout: bool = ..., operand_shapes_with_layout: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ..., triangular_solve_options: _Optional[_Union[TriangularSolveOptions, _Mapping]] = ..., cholesky_options: _Optional[_Union[CholeskyOptions, _Mapping]] = ..., parameter_replication: _Optional[_Union[ParameterReplication, _Mapping]] = ..., outer_dimension_partitions: _Optional[_Iterable[int]] = ..., custom_call_has_side_effect: bool = ..., delta: _Optional[int] = ..., indices_are_sorted: bool = ...) -> None: ...

class HloComputationProto(_message.Message):
    __slots__ = ("name", "instructions", "program_shape", "id", "root_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_SHAPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ROOT_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    instructions: _containers.RepeatedCompositeFieldContainer[HloInstructionProto]
    program_shape: ProgramShapeProto
    id: int
    root_id: int
    def __init__(self, name: _Optional[str] = ..., instructions: _Optional[_Iterable[_Union[HloInstructionProto, _Mapping]]] = ..., program_shape: _Optional[_Union[ProgramShapeProto, _Mapping]] = ..., id: _Optional[int] = ..., root_id: _Optional[int] = ...) -> None: ...

class HloScheduleProto(_message.Message):
    __slots__ = ("sequences",)
    class InstructionSequence(_message.Message):
        __slots__ = ("instruction_ids",)
        INSTRUCTION_IDS_FIELD_NUMBER: _ClassVar[int]
        instruction_ids: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, instruction_ids: _Optional[_Iterable[int]] = ...) -> None: ...
    class SequencesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: HloScheduleProto.InstructionSequence
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[HloScheduleProto.InstructionSequence, _Mapping]] = ...) -> None: ...
    SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    sequences: _containers.MessageMap[int, HloScheduleProto.InstructionSequence]
    def __init__(self, sequences: _Optional[_Mapping[int, HloScheduleProto.InstructionSequence]] = ...) -> None: ...

class HloInputOutputAliasProto(_message.Message):
    __slots__ = ("entries",)
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNDEFINED_ALIAS: _ClassVar[HloInputOutputAliasProto.Kind]
        USER_ALIAS: _ClassVar[HloInputOutputAliasProto.Kind]
        SYSTEM_ALIAS: _ClassVar[HloInputOutputAliasProto.Kind]
    UNDEFINED_ALIAS: HloInputOutputAliasProto.Kind
    USER_ALIAS: HloInputOutputAliasProto.Kind
    SYSTEM_ALIAS: HloInputOutputAliasProto.Kind
    class AliasEntryProto(_message.Message):
        __slots__ = ("output_shape_index", "parameter_number", "parameter_shape_index", "kind")
        OUTPUT_SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
        PARAMETER_NUMBER_FIELD_NUMBER: _ClassVar[int]
        PARAMETER_SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
        KIND_FIELD_NUMBER: _ClassVar[int]
        output_shape_index: _containers.RepeatedScalarFieldContainer[int]
        parameter_number: int
        parameter_shape_index: _containers.RepeatedScalarFieldContainer[int]
        kind: HloInputOutputAliasProto.Kind
        def __init__(self, output_shape_index: _Optional[_Iterable[int]] = ..., parameter_number: _Optional[int] = ..., parameter_shape_index: _Optional[_Iterable[int]] = ..., kind: _Optional[_Union[HloInputOutputAliasProto.Kind, str]] = ...) -> None: ...
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[HloInputOutputAliasProto.AliasEntryProto]
    def __init__(self, entries: _Optional[_Iterable[_Union[HloInputOutputAliasProto.AliasEntryProto, _Mapping]]] = ...) -> None: ...

class DynamicParameterBindingProto(_message.Message):
    __slots__ = ("entries",)
    class Binding(_message.Message):
        __slots__ = ("dynamic_param_num", "dynamic_param_index", "target_param_num", "target_param_index", "target_param_dim_num")
        DYNAMIC_PARAM_NUM_FIELD_NUMBER: _ClassVar[int]
        DYNAMIC_PARAM_INDEX_FIELD_NUMBER: _ClassVar[int]
        TARGET_PARAM_NUM_FIELD_NUMBER: _ClassVar[int]
        TARGET_PARAM_INDEX_FIELD_NUMBER: _ClassVar[int]
        TARGET_PARAM_DIM_NUM_FIELD_NUMBER: _ClassVar[int]
        dynamic_param_num: int
        dynamic_param_index: _containers.RepeatedScalarFieldContainer[int]
        target_param_num: int
        target_param_index: _containers.RepeatedScalarFieldContainer[int]
        target_param_dim_num: int
        def __init__(self, dynamic_param_num: _Optional[int] = ..., dynamic_param_index: _Optional[_Iterable[int]] = ..., target_param_num: _Optional[int] = ..., target_param_index: _Optional[_Iterable[int]] = ..., target_param_dim_num: _Optional[int] = ...) -> None: ...
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[DynamicParameterBindingProto.Binding]
    def __init__(self, entries: _Optional[_Iterable[_Union[DynamicParameterBindingProto.Binding, _Mapping]]] = ...) -> None: ...

class HloModuleProto(_message.Message):
    __slots__ = ("name", "entry_computation_name", "entry_computation_id", "computations", "host_program_shape", "id", "schedule", "input_output_alias", "dynamic_parameter_binding")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_ID_FIELD_NUMBER: _ClassVar[int]
    COMPUTATIONS_FIELD_NUMBER: _ClassVar[int]
    HOST_PROGRAM_SHAPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    INPUT_OUTPUT_ALIAS_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_PARAMETER_BINDING_FIELD_NUMBER: _ClassVar[int]
    name: str
    entry_computation_name: str
    entry_computation_id: int
    computations: _containers.RepeatedCompositeFieldContainer[HloComputationProto]
    host_program_shape: ProgramShapeProto
    id: int
    schedule: HloScheduleProto
    input_output_alias: HloInputOutputAliasProto
    dynamic_parameter_binding: DynamicParameterBindingProto
    def __init__(self, name: _Optional[str] = ..., entry_computation_name: _Optional[str] = ..., entry_computation_id: _Optional[int] = ..., computations: _Optional[_Iterable[_Union[HloComputationProto, _Mapping]]] = ..., host_program_shape: _Optional[_Union[ProgramShapeProto, _Mapping]] = ..., id: _Optional[int] = ..., schedule: _Optional[_Union[HloScheduleProto, _Mapping]] = ..., input_output_alias: _Optional[_Union[HloInputOutputAliasProto, _Mapping]] = ..., dynamic_parameter_binding: _Optional[_Union[DynamicParameterBindingProto, _Mapping]] = ...) -> None: ...

class LogicalBufferProto(_message.Message):
    __slots__ = ("id", "size", "defined_at", "color")
    class Location(_message.Message):
        __slots__ = ("computation_name", "instruction_name", "shape_index")
        COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
        INSTRUCTION_NAME_FIELD_NUMBER: _ClassVar[int]
        SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
        computation_name: str
        instruction_name: str
        shape_index: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, computation_name: _Optional[str] = ..., instruction_name: _Optional[str] = ..., shape_index: _Optional[_Iterable[int]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    DEFINED_AT_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    id: int
    size: int
    defined_at: LogicalBufferProto.Location
    color: int
    def __init__(self, id: _Optional[int] = ..., size: _Optional[int] = ..., defined_at: _Optional[_Union[LogicalBufferProto.Location, _Mapping]] = ..., color: _Optional[int] = ...) -> None: ...

class BufferAllocationProto(_message.Message):
    __slots__ = ("index", "size", "is_thread_local", "is_tuple", "is_entry_computation_parameter", "is_constant", "parameter_number", "parameter_shape_index", "maybe_live_out", "color", "assigned")
    class Assigned(_message.Message):
        __slots__ = ("logical_buffer_id", "offset", "size")
        LOGICAL_BUFFER_ID_FIELD_NUMBER: _ClassVar[int]
        OFFSET_FIELD_NUMBER: _ClassVar[int]
        SIZE_FIELD_NUMBER: _ClassVar[int]
        logical_buffer_id: int
        offset: int
        size: int
        def __init__(self, logical_buffer_id: _Optional[int] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ...) -> None: ...
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    IS_THREAD_LOCAL_FIELD_NUMBER: _ClassVar[int]
    IS_TUPLE_FIELD_NUMBER: _ClassVar[int]
    IS_ENTRY_COMPUTATION_PARAMETER_FIELD_NUMBER: _ClassVar[int]
    IS_CONSTANT_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_NUMBER_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
    MAYBE_LIVE_OUT_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    ASSIGNED_FIELD_NUMBER: _ClassVar[int]
    index: int
    size: int
    is_thread_local: bool
    is_tuple: bool
    is_entry_computation_parameter: bool
    is_constant: bool
    parameter_number: int
    parameter_shape_index: _containers.RepeatedScalarFieldContainer[int]
    maybe_live_out: bool
    color: int
    assigned: _containers.RepeatedCompositeFieldContainer[BufferAllocationProto.Assigned]
    def __init__(self, index: _Optional[int] = ..., size: _Optional[int] = ..., is_thread_local: bool = ..., is_tuple: bool = ..., is_entry_computation_parameter: bool = ..., is_constant: bool = ..., parameter_number: _Optional[int] = ..., parameter_shape_index: _Optional[_Iterable[int]] = ..., maybe_live_out: bool = ..., color: _Optional[int] = ..., assigned: _Optional[_Iterable[_Union[BufferAllocationProto.Assigned, _Mapping]]] = ...) -> None: ...

class HeapSimulatorTrace(_message.Message):
    __slots__ = ("events", "whole_module_simulation")
    class Event(_message.Message):
        __slots__ = ("kind", "buffer_id", "computation_name", "instruction_name", "share_with_canonical_id")
        class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            ALLOC: _ClassVar[HeapSimulatorTrace.Event.Kind]
            FREE: _ClassVar[HeapSimulatorTrace.Event.Kind]
            SHARE_WITH: _ClassVar[HeapSimulatorTrace.Event.Kind]
        ALLOC: HeapSimulatorTrace.Event.Kind
        FREE: HeapSimulatorTrace.Event.Kind
        SHARE_WITH: HeapSimulatorTrace.Event.Kind
        KIND_FIELD_NUMBER: _ClassVar[int]
        BUFFER_ID_FIELD_NUMBER: _ClassVar[int]
        COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
        INSTRUCTION_NAME_FIELD_NUMBER: _ClassVar[int]
        SHARE_WITH_CANONICAL_ID_FIELD_NUMBER: _ClassVar[int]
        kind: HeapSimulatorTrace.Event.Kind
        buffer_id: int
        computation_name: str
        instruction_name: str
        share_with_canonical_id: int
        def __init__(self, kind: _Optional[_Union[HeapSimulatorTrace.Event.Kind, str]] = ..., buffer_id: _Optional[int] = ..., computation_name: _Optional[str] = ..., instruction_name: _Optional[str] = ..., share_with_canonical_id: _Optional[int] = ...) -> None: ...
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    WHOLE_MODULE_SIMULATION_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[HeapSimulatorTrace.Event]
    whole_module_simulation: bool
    def __init__(self, events: _Optional[_Iterable[_Union[HeapSimulatorTrace.Event, _Mapping]]] = ..., whole_module_simulation: bool = ...) -> None: ...

class HloModuleGroupProto(_message.Message):
    __slots__ = ("name", "hlo_modules")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HLO_MODULES_FIELD_NUMBER: _ClassVar[int]
    name: str
    hlo_modules: _containers.RepeatedCompositeFieldContainer[HloModuleProto]
    def __init__(self, name: _Optional[str] = ..., hlo_modules: _Optional[_Iterable[_Union[HloModuleProto, _Mapping]]] = ...) -> None: ...

class BufferAssignmentProto(_message.Message):
    __slots__ = ("logical_buffers", "buffer_aliases", "buffer_allocations", "heap_simulator_traces")
    class BufferAlias(_message.Message):
        __slots__ = ("source_buffer_id", "location")
        SOURCE_BUFFER_ID_FIELD_NUMBER: _ClassVar[int]
        LOCATION_FIELD_NUMBER: _ClassVar[int]
        source_buffer_id: int
        location: LogicalBufferProto.Location
        def __init__(self, source_buffer_id: _Optional[int] = ..., location: _Optional[_Union[LogicalBufferProto.Location, _Mapping]] = ...) -> None: ...
    LOGICAL_BUFFERS_FIELD_NUMBER: _ClassVar[int]
    BUFFER_ALIASES_FIELD_NUMBER: _ClassVar[int]
    BUFFER_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    HEAP_SIMULATOR_TRACES_FIELD_NUMBER: _ClassVar[int]
    logical_buffers: _containers.RepeatedCompositeFieldContainer[LogicalBufferProto]
    buffer_aliases: _containers.RepeatedCompositeFieldContainer[BufferAssignmentProto.BufferAlias]
    buffer_allocations: _containers.RepeatedCompositeFieldContainer[BufferAllocationProto]
    heap_simulator_traces: _containers.RepeatedCompositeFieldContainer[HeapSimulatorTrace]
    def __init__(self, logical_buffers: _Optional[_Iterable[_Union[LogicalBufferProto, _Mapping]]] = ..., buffer_aliases: _Optional[_Iterable[_Union[BufferAssignmentProto.BufferAlias, _Mapping]]] = ..., buffer_allocations: _Optional[_Iterable[_Union[BufferAllocationProto, _Mapping]]] = ..., heap_simulator_traces: _Optional[_Iterable[_Union[HeapSimulatorTrace, _Mapping]]] = ...) -> None: ...

class HloProto(_message.Message):
    __slots__ = ("hlo_module", "buffer_assignment")
    HLO_MODULE_FIELD_NUMBER: _ClassVar[int]
    BUFFER_ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    hlo_module: HloModuleProto
    buffer_assignment: BufferAssignmentProto
    def __init__(self, hlo_module: _Optional[_Union[HloModuleProto, _Mapping]] = ..., buffer_assignment: _Optional[_Union[BufferAssignmentProto, _Mapping]] = ...) -> None: ...

class HloSnapshot(_message.Message):
    __slots__ = ("hlo", "arguments", "result", "execution_platform")
    HLO_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_PLATFORM_FIELD_NUMBER: _ClassVar[int]
    hlo: HloProto
    arguments: _containers.RepeatedCompositeFieldContainer[LiteralProto]
    result: LiteralProto
    execution_platform: str
    def __init__(self, hlo: _Optional[_Union[HloProto, _Mapping]] = ..., arguments: _Optional[_Iterable[_Union[LiteralProto, _Mapping]]] = ..., result: _Optional[_Union[LiteralProto, _Mapping]] = ..., execution_platform: _Optional[str] = ...) -> None: ...
