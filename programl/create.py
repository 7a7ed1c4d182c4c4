"""Creating program graphs: ``from_llvm_ir``, ``from_bitcode``, ``from_clang``, ``from_cpp``, ``from_opencl``,
``from_cuda``, ``from_fortran``.

Mirrors programl 0.3.2's creation ops (docs/spec/python-api.md#creation): one input gives one :class:`ProgramGraph`; an
iterable of inputs gives a lazy generator that yields the graphs in input order, computed through ``executor``.
With ``executor=None`` an iterable runs in a :class:`~programl.util.executor.TimeoutProcessPool` (one worker per
CPU), where an input that runs past ``timeout`` seconds is killed and raises :class:`TimeoutError`; any object with
``submit()`` works instead (``concurrent.futures`` executors, dask's ``client.get_executor()``). A single input
runs in this process; its ``timeout`` bounds the clang subprocess.

Inputs are type-checked: a value that is neither one input nor an iterable of inputs raises
:class:`TypeError` at the call; an iterable's items are checked one by one, so a wrong item fails that input (its
``next()``) with :class:`TypeError` and the items before it still give their graphs. IR may be ``str`` or UTF-8
bytes (``bytes``, ``bytearray``, ``memoryview``), bitcode only bytes, sources only ``str``.

Differences from 0.3.2 (docs/compat.md): graphs come from LLVM 22; ``version`` takes 0.3.2's values (``"10"``,
``"6"``, ``"3.8"`` for IR, ``"10"`` for clang) and reads the input with LLVM 22 after one
:class:`LegacyVersionWarning` per version, and ``"22"``; builder options are keyword arguments; C/C++/OpenCL/CUDA
go through clang-22 (:mod:`programl.graph_builder.clang`, which compiles C as clang 10 accepted it) and Fortran
through flang-22 (:mod:`programl.graph_builder.flang`); ``.ll``/``.bc`` inputs of :func:`from_clang` are read as
:func:`from_llvm_ir` / :func:`from_bitcode` read them.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from programl.exceptions import GraphCreationError, UnsupportedCompiler
from programl.graph_builder import clang, flang
from programl.graph_builder.llvm import BuildOptions, graph_from_bitcode, graph_from_ir
from programl.proto import ProgramGraph
from programl.util.executor import TimeoutProcessPool, check_limits, execute

__all__ = [
    "LEGACY_CLANG_VERSIONS",
    "LEGACY_LLVM_VERSIONS",
    "LegacyVersionWarning",
    "from_bitcode",
    "from_clang",
    "from_cpp",
    "from_cuda",
    "from_fortran",
    "from_llvm_ir",
    "from_opencl",
    "from_xla_hlo_proto",
]

SUPPORTED_VERSIONS = ("22",)
#: programl 0.3.2's ``version`` values (its llvm2graph-10/-6/-3.8 and clang2graph-10 binaries): accepted, and the
#: input is read with LLVM 22 instead, after one warning per version.
LEGACY_LLVM_VERSIONS = ("10", "6", "3.8")
LEGACY_CLANG_VERSIONS = ("10",)

GraphOrGraphs = ProgramGraph | Iterator[ProgramGraph]


class LegacyVersionWarning(UserWarning):
    """A programl 0.3.2 ``version`` was asked for; the input is read with LLVM 22 instead."""


_warned: set[tuple[str, str]] = set()


def _check_version(version: str | None, what: str) -> None:
    """Accept ``"22"``, None and 0.3.2's versions (one :class:`LegacyVersionWarning` per version and process)."""
    if version is None or str(version) in SUPPORTED_VERSIONS:
        return
    legacy = LEGACY_LLVM_VERSIONS if what == "LLVM" else LEGACY_CLANG_VERSIONS
    if str(version) in legacy:
        if (what, str(version)) not in _warned:
            _warned.add((what, str(version)))
            warnings.warn(
                f"{what} {version} is not available: programl reads the input with LLVM 22 instead (graphs differ "
                "from 0.3.2's only as docs/compat.md says; pass version='22' to silence this warning)",
                LegacyVersionWarning,
                stacklevel=3,
            )
        return
    raise UnsupportedCompiler(
        f"{what} version {version!r} is not supported: programl reads IR with LLVM 22 "
        f"(older textual IR and bitcode are upgraded when read); versions: {', '.join((*SUPPORTED_VERSIONS, *legacy))}"
    )


def _run_many(fn, inputs: Iterable, timeout: float | None, executor: Any, chunksize: int | None):
    if executor is not None:
        yield from execute(fn, inputs, executor=executor, chunksize=chunksize, timeout=timeout)
        return
    with TimeoutProcessPool(timeout=timeout) as pool:
        yield from execute(fn, inputs, executor=pool, chunksize=chunksize, timeout=timeout)


def _options(instructions_only: bool, ignore_call_returns: bool, strict: bool) -> BuildOptions:
    return BuildOptions(instructions_only=instructions_only, ignore_call_returns=ignore_call_returns, strict=strict)


_BYTES = (bytes, bytearray, memoryview)


def _type_error(function: str, expected: str, value: Any) -> TypeError:
    return TypeError(f"{function}() expects {expected}, got {type(value).__name__}")


def _check_iterable(function: str, expected: str, value: Any) -> None:
    """Raise ``TypeError`` unless ``value`` is an iterable of inputs (its items are checked by the workers)."""
    if isinstance(value, (str, *_BYTES)) or not isinstance(value, Iterable):
        raise _type_error(function, expected, value)


def _check_copts(function: str, copts: Any) -> None:
    """Raise ``TypeError`` unless ``copts`` is None or a sequence of str (a lone str would be split into letters)."""
    if copts is not None and (isinstance(copts, str) or not all(isinstance(flag, str) for flag in copts)):
        raise _type_error(function, "copts as a list of str", copts)


def _ir_to_graph(ir: str | bytes, options: BuildOptions) -> ProgramGraph:
    if not isinstance(ir, (str, *_BYTES)):
        raise _type_error("from_llvm_ir", "LLVM IR as str or bytes in the iterable", ir)
    return graph_from_ir(ir, options=options)


def from_llvm_ir(
    irs: str | Iterable[str],
    timeout: float | None = 300,
    version: str | None = "22",
    executor: Any = None,
    chunksize: int | None = None,
    *,
    instructions_only: bool = False,
    ignore_call_returns: bool = False,
    strict: bool = False,
) -> GraphOrGraphs:
    """Build graphs from textual LLVM IR (any version LLVM 22 reads; typed-pointer IR is upgraded).

    Args:
        irs: One IR text, or an iterable of them.
        timeout: Seconds per input (enforced for iterables run by the default process pool).
        version: Must be ``"22"`` (or None).
        executor: Runs the inputs of an iterable (default: a process pool).
        chunksize: Most inputs in flight ahead of the one being yielded.
        instructions_only: See :class:`~programl.graph_builder.llvm.BuildOptions`.
        ignore_call_returns: See :class:`~programl.graph_builder.llvm.BuildOptions`.
        strict: See :class:`~programl.graph_builder.llvm.BuildOptions`.

    Returns:
        A ProgramGraph for one input, a generator of them for an iterable.

    Raises:
        GraphCreationError: Invalid IR (the message has ``line:column``).
        UnsupportedCompiler: Another ``version`` was asked for.
        TypeError: ``irs`` is neither IR (``str`` or bytes) nor an iterable of IR; from the generator, for an item
            that is not IR.
    """
    _check_version(version, "LLVM")
    check_limits(timeout, chunksize)
    fn = functools.partial(_ir_to_graph, options=_options(instructions_only, ignore_call_returns, strict))
    if isinstance(irs, (str, *_BYTES)):
        return fn(irs)
    _check_iterable("from_llvm_ir", "LLVM IR (str or bytes) or an iterable of it", irs)
    return _run_many(fn, irs, timeout, executor, chunksize)


def _bitcode_to_graph(bitcode: bytes, options: BuildOptions) -> ProgramGraph:
    if not isinstance(bitcode, _BYTES):
        raise _type_error("from_bitcode", "bitcode as bytes in the iterable", bitcode)
    return graph_from_bitcode(bytes(bitcode), options=options)


def from_bitcode(
    bitcodes: bytes | Iterable[bytes],
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
    *,
    instructions_only: bool = False,
    ignore_call_returns: bool = False,
    strict: bool = False,
) -> GraphOrGraphs:
    """Build graphs from LLVM bitcode (one ``bytes`` or an iterable of them); see :func:`from_llvm_ir`.

    Raises:
        TypeError: ``bitcodes`` is a ``str`` (IR text goes to :func:`from_llvm_ir`) or not bytes nor an iterable.
    """
    check_limits(timeout, chunksize)
    fn = functools.partial(_bitcode_to_graph, options=_options(instructions_only, ignore_call_returns, strict))
    if isinstance(bitcodes, _BYTES):
        return fn(bytes(bitcodes))
    _check_iterable("from_bitcode", "bitcode (bytes) or an iterable of it (IR text goes to from_llvm_ir)", bitcodes)
    return _run_many(fn, bitcodes, timeout, executor, chunksize)


#: The public function behind each ``_from_source`` language, for its error messages.
_SOURCE_FUNCTIONS = {"cl": "from_opencl", "cuda": "from_cuda"}


def _source_to_graph(
    source: str,
    language: str,
    flags: tuple[str, ...],
    system_includes: bool,
    timeout: float | None,
    options: BuildOptions,
) -> ProgramGraph:
    if not isinstance(source, str):
        raise _type_error(_SOURCE_FUNCTIONS.get(language, "from_cpp"), "source text as str in the iterable", source)
    ir = clang.compile_source(source, language, flags, timeout=timeout, system_includes=system_includes)
    return graph_from_ir(ir, module_name="-", options=options)


def from_cpp(
    srcs: str | Iterable[str],
    copts: Sequence[str] | None = None,
    system_includes: bool = True,
    language: str = "c++",
    version: str | None = "22",
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
    *,
    instructions_only: bool = False,
    ignore_call_returns: bool = False,
    strict: bool = False,
) -> GraphOrGraphs:
    """Build graphs from C or C++ source text with clang-22 (the module is named ``-``, as in 0.3.2). C is compiled
    as clang 10 accepted it (implicit declarations and ``int`` are warnings unless ``copts`` asks for ``-Werror``;
    :data:`programl.graph_builder.clang.C_COMPAT_FLAGS`).

    Args:
        srcs: One source text, or an iterable of them.
        copts: clang flags, e.g. ``["-O2", "-DN=4"]`` (clang's default is -O0).
        system_includes: When False, clang does not search the system include directories.
        language: ``"c++"`` or ``"c"``.
        version: Must be ``"22"`` (or None).
        timeout, executor, chunksize: As for :func:`from_llvm_ir`.

    Raises:
        UnsupportedCompiler: clang 22 is missing, or an unsupported ``version``/``language``.
        GraphCreationError: The source does not compile (``-:line:col: error: message``, as clang prints it), or
            ``copts`` has a flag that changes clang's output (``-o``, ``-E``, ``-fsyntax-only`` ...).
    """
    _check_version(version, "clang")
    if language not in ("c", "c++"):
        raise UnsupportedCompiler(f"language {language!r} is not supported by from_cpp (use 'c' or 'c++')")
    return _from_source(
        srcs,
        language,
        copts,
        system_includes,
        timeout,
        executor,
        chunksize,
        _options(instructions_only, ignore_call_returns, strict),
    )


def from_opencl(
    srcs: str | Iterable[str],
    copts: Sequence[str] | None = None,
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
    *,
    instructions_only: bool = False,
    ignore_call_returns: bool = False,
    strict: bool = False,
) -> GraphOrGraphs:
    """Build graphs from OpenCL C kernels with clang-22 (``-x cl -cl-std=CL1.2 -Xclang -finclude-default-header
    -target spir64``, as for the devmap data set); see :func:`from_cpp`."""
    return _from_source(
        srcs, "cl", copts, True, timeout, executor, chunksize, _options(instructions_only, ignore_call_returns, strict)
    )


def from_cuda(
    srcs: str | Iterable[str],
    copts: Sequence[str] | None = None,
    gpu_arch: str = clang.CUDA_DEFAULT_ARCH,
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
    *,
    instructions_only: bool = False,
    ignore_call_returns: bool = False,
    strict: bool = False,
) -> GraphOrGraphs:
    """Build graphs of CUDA device code with clang-22, without the CUDA SDK (``-x cuda --cuda-device-only
    -nocudainc -nocudalib`` and programl's ``cuda_prelude.h``: the CUDA attributes, ``threadIdx`` & co., atomics).

    Args:
        srcs: One ``.cu`` source text, or an iterable of them (the module is named ``-``).
        copts: More clang flags (``-O2``, ``-DBLOCK=256`` ...).
        gpu_arch: The GPU architecture to compile for (``--cuda-gpu-arch``), e.g. ``sm_70`` or ``sm_90``.
        timeout, executor, chunksize: As for :func:`from_llvm_ir`.

    Raises:
        UnsupportedCompiler: clang 22 is missing.
        GraphCreationError: The source does not compile (line and column of the first error).
    """
    flags = [f"--cuda-gpu-arch={gpu_arch}", *(copts or ())]
    return _from_source(
        srcs,
        "cuda",
        flags,
        True,
        timeout,
        executor,
        chunksize,
        _options(instructions_only, ignore_call_returns, strict),
    )


def _fortran_to_graph(
    source: str, flags: tuple[str, ...], fixed_form: bool, timeout: float | None, options: BuildOptions
) -> ProgramGraph:
    if not isinstance(source, str):
        raise _type_error("from_fortran", "source text as str in the iterable", source)
    ir = flang.compile_source(source, flags, fixed_form=fixed_form, timeout=timeout)
    return graph_from_ir(ir, module_name="-", options=options)


def from_fortran(
    srcs: str | Iterable[str],
    copts: Sequence[str] | None = None,
    fixed_form: bool = False,
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
    *,
    instructions_only: bool = False,
    ignore_call_returns: bool = False,
    strict: bool = False,
) -> GraphOrGraphs:
    """Build graphs from Fortran source text with flang-22 (the module is named ``-``).

    Args:
        srcs: One Fortran source text, or an iterable of them.
        copts: flang flags, e.g. ``["-O2"]`` (flang's default is -O0).
        fixed_form: The text is fixed-form (FORTRAN 77 layout) rather than free-form Fortran.
        timeout, executor, chunksize: As for :func:`from_llvm_ir`.

    Raises:
        UnsupportedCompiler: flang 22 is missing.
        GraphCreationError: The source does not compile (line and column of the first error).
    """
    if not isinstance(srcs, str):
        _check_iterable("from_fortran", "source text (str) or an iterable of it", srcs)
    _check_copts("from_fortran", copts)
    check_limits(timeout, chunksize)
    flang.find_flang()  # fail early, with the install hint, when flang is missing
    flags = tuple(copts or ())
    clang.check_flags(flags)
    fn = functools.partial(
        _fortran_to_graph,
        flags=flags,
        fixed_form=fixed_form,
        timeout=timeout,
        options=_options(instructions_only, ignore_call_returns, strict),
    )
    if isinstance(srcs, str):
        return fn(srcs)
    return _run_many(fn, srcs, timeout, executor, chunksize)


def _from_source(srcs, language, copts, system_includes, timeout, executor, chunksize, options) -> GraphOrGraphs:
    function = _SOURCE_FUNCTIONS.get(language, "from_cpp")
    if not isinstance(srcs, str):
        _check_iterable(function, "source text (str) or an iterable of it", srcs)
    _check_copts(function, copts)
    check_limits(timeout, chunksize)
    clang.find_clang()  # fail early, with the install hint, when clang is missing
    clang.check_flags(tuple(copts or ()))  # and on flags that would make clang write no IR
    fn = functools.partial(
        _source_to_graph,
        language=language,
        flags=tuple(copts or ()),
        system_includes=system_includes,
        timeout=timeout,
        options=options,
    )
    if isinstance(srcs, str):
        return fn(srcs)
    return _run_many(fn, srcs, timeout, executor, chunksize)


def _args_to_graph(
    args: Sequence[str], system_includes: bool, timeout: float | None, options: BuildOptions
) -> ProgramGraph:
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise _type_error("from_clang", "a list of clang arguments (str) for each input", args)
    suffix = os.path.splitext(args[0])[1].lower() if len(args) == 1 else ""
    if suffix in clang.IR_SUFFIXES:  # a lone .ll/.bc file is read as from_llvm_ir/from_bitcode read it
        path = args[0]
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as error:
            raise GraphCreationError(f"cannot read: {error.strerror or error}", path) from None
        build = graph_from_bitcode if suffix == ".bc" else graph_from_ir
        return build(data, path=path, module_name=path, options=options)
    inputs = clang.inputs_of(args)
    ir = clang.compile_args(args, timeout=timeout, system_includes=system_includes)
    return graph_from_ir(ir, module_name=inputs[0] if inputs else None, options=options)


def from_clang(
    args: Sequence[str] | Iterable[Sequence[str]],
    system_includes: bool = True,
    version: str | None = "22",
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
    *,
    instructions_only: bool = False,
    ignore_call_returns: bool = False,
    strict: bool = False,
) -> GraphOrGraphs:
    """Build graphs by running clang-22 with your arguments (which name one input file each), e.g.
    ``from_clang(["-O1", "foo.c"])``. A non-empty list whose first element is a str is one input; otherwise
    ``args`` is an iterable of such lists. The module is named after the input file.

    C is compiled as clang 10 accepted it and ``.cu`` files as CUDA device code (see
    :mod:`programl.graph_builder.clang`). A lone ``.ll`` or ``.bc`` file is read as :func:`from_llvm_ir` /
    :func:`from_bitcode` read it (old IR included); with more arguments (``-O2``) clang-22 compiles its upgraded
    text.

    Raises:
        GraphCreationError: clang's first error (``file:line:col: error: message``), several input files in one
            argument list, or a flag that changes clang's output (``-o``, ``-E``, ``-fsyntax-only`` ...).
    """
    _check_version(version, "clang")
    expected = "a list of clang arguments, e.g. ['-O1', 'foo.c'], or an iterable of such lists"
    if isinstance(args, (str, *_BYTES)) or not isinstance(args, Iterable):
        raise _type_error("from_clang", expected, args)
    if isinstance(args, (list, tuple)) and args and not isinstance(args[0], str):
        if isinstance(args[0], (str, *_BYTES)) or not isinstance(args[0], Iterable):
            raise _type_error("from_clang", expected, args[0])
    check_limits(timeout, chunksize)
    clang.find_clang()
    if isinstance(args, (list, tuple)) and args and isinstance(args[0], str):
        clang.check_flags(list(args), None)
    fn = functools.partial(
        _args_to_graph,
        system_includes=system_includes,
        timeout=timeout,
        options=_options(instructions_only, ignore_call_returns, strict),
    )
    if isinstance(args, (list, tuple)) and args and isinstance(args[0], str):
        return fn(list(args))
    return _run_many(fn, (_argument_list(a) for a in args), timeout, executor, chunksize)


def _argument_list(args: Any) -> Any:
    """One input of ``from_clang``'s iterable as a list (a str or a non-iterable is left for the worker to reject)."""
    return list(args) if isinstance(args, Iterable) and not isinstance(args, (str, *_BYTES)) else args


def from_xla_hlo_proto(
    hlos: Any | Iterable[Any],
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
) -> GraphOrGraphs:
    """Build graphs from XLA HLO modules, node for node as programl 0.3.2's ``xla2graph``
    (docs/spec/graph.md#xla-hlo-graphs).

    Args:
        hlos: One ``HloProto`` (:mod:`programl.third_party.tensorflow.xla_pb2`, or another class of the message
            ``xla.HloProto``), or an iterable of them. An ``HloModuleProto`` (what jax's
            ``as_serialized_hlo_module_proto()`` gives, parsed) or the bytes of a serialized ``HloProto`` work too.
        timeout, executor, chunksize: As for :func:`from_llvm_ir`.

    Returns:
        A ProgramGraph for one input, a generator of them for an iterable.

    Raises:
        GraphCreationError: A malformed module (an operand or callee used before it is defined, no entry
            computation, bytes that are not an ``HloProto``).
        TypeError: An input is not an HLO message or bytes.
    """
    from programl.graph_builder import xla

    check_limits(timeout, chunksize)
    if isinstance(hlos, (bytes, bytearray, memoryview)) or hasattr(hlos, "SerializeToString"):
        return xla.graph_from_hlo_bytes(xla.serialize_hlo(hlos))
    return _run_many(xla.graph_from_hlo_bytes, (xla.serialize_hlo(hlo) for hlo in hlos), timeout, executor, chunksize)
