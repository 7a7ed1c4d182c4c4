"""C, C++, OpenCL C and CUDA -> LLVM IR with clang-22 (front ends: docs/spec/python-api.md#creation;
docs/spec/design.md#building-graphs-fast).

clang must have the same major version as llvmlite's LLVM (22) so that its IR always parses. It is found through
``$PROGRAML_CLANG``, then ``clang-22`` on ``PATH``, then a ``clang`` on ``PATH`` whose major version is 22; when
none is found, :class:`~programl.exceptions.UnsupportedCompiler` says how to install it.

Errors keep clang's own form: :class:`CompilerError` (a :class:`~programl.exceptions.GraphCreationError`) prints as
``file:line:col: error: message`` for clang's first error, and as ``error: message`` where clang gives no location.
A compiler that runs out of memory or crashes is reported in one line (never its stack dump).

Compatibility with programl 0.3.2, whose front end was clang 10 (docs/compat.md, docs/spec/policy.md):

* C is compiled as clang 10 accepted it: the diagnostics that clang 15-22 turned from warnings into errors
  (:data:`C_COMPAT_FLAGS`: implicit function declarations, implicit ``int``, int/pointer conversions, incompatible
  pointer types) are warnings again, unless the caller's flags ask for errors (``-Werror``, ``-Werror=...``,
  ``-pedantic-errors``; the caller's flags come later on the command line, so they win).
* Flags that change what clang writes (``-o``, ``-E``, ``-fsyntax-only``, ``-emit-ast`` ...) are rejected: programl
  reads clang's textual IR from its standard output (:func:`check_flags`).
* ``from_clang`` of several inputs fails as 0.3.2 did ("expected exactly one compiler job").
* ``.ll`` inputs to :func:`compile_args` are upgraded as :func:`~programl.graph_builder.llvm.parse_ir` upgrades them
  (old ``byval``/``sret`` spellings) before clang-22 reads them.

CUDA (``.cu``) is compiled for the device only, without the CUDA SDK (:data:`CUDA_FLAGS`, ``cuda_prelude.h``), for
the GPU architecture :data:`CUDA_DEFAULT_ARCH` unless the flags name one.

Other front ends, for data sets that want IR as other compilers write it (``datasets/deepdataflow22-wide``): a
``language`` may name its compiler after an ``@`` (:func:`split_language`). ``c@clang-14`` (also ``c++``, ``cl``,
``cuda``) compiles with clang 14 (:data:`OLDER_CLANGS`; ``$PROGRAML_CLANG14`` or ``clang-14`` on ``PATH``): its
textual IR has typed pointers, so it is asked for bitcode, which LLVM 22 reads and upgrades (the bitcode
compatibility promise), and the IR returned is that module as LLVM 22 prints it. ``fortran`` (or
``fortran@flang-22``) compiles with flang-22 (:func:`programl.graph_builder.flang.compile_file`).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Sequence

from programl.exceptions import GraphCreationError, UnsupportedCompiler

__all__ = [
    "CLANG_MAJOR",
    "CUDA_DEFAULT_ARCH",
    "CUDA_FLAGS",
    "CUDA_PRELUDE",
    "C_COMPAT_FLAGS",
    "CompilerError",
    "IR_SUFFIXES",
    "LANGUAGES",
    "OLDER_CLANGS",
    "OPENCL_FLAGS",
    "check_flags",
    "compile_args",
    "compile_file",
    "compile_source",
    "find_clang",
    "find_older_clang",
    "find_tool",
    "inputs_of",
    "language_of",
    "run_compiler",
    "split_language",
]

#: The clang major version used (that of llvmlite's LLVM, so that its IR always parses).
CLANG_MAJOR = 22

#: ``-x`` language per file extension
LANGUAGES = {
    ".c": "c",
    ".cc": "c++",
    ".cpp": "c++",
    ".cxx": "c++",
    ".c++": "c++",
    ".cl": "cl",
    ".cu": "cuda",
}

#: LLVM inputs that clang also accepts (``from_clang``): textual IR and bitcode.
IR_SUFFIXES = (".ll", ".bc")

#: Flags for OpenCL C kernels (docs/spec/tasks.md#device-mapping; the devmap manifest's base command).
OPENCL_FLAGS = ("-cl-std=CL1.2", "-Xclang", "-finclude-default-header", "-target", "spir64")

#: The diagnostics that clang 10 reported as warnings in C and clang 15-22 report as errors (clang 15:
#: int-conversion; clang 16: implicit-function-declaration, implicit-int, incompatible-function-pointer-types;
#: later: incompatible-pointer-types). Checked against clang-14 and clang-22 on
#: tests/data/programs/legacy_c/knr_legacy.c.
C_COMPAT_FLAGS = (
    "-Wno-error=implicit-function-declaration",
    "-Wno-error=implicit-int",
    "-Wno-error=int-conversion",
    "-Wno-error=incompatible-function-pointer-types",
    "-Wno-error=incompatible-pointer-types",
)

#: The header that stands in for the CUDA SDK's (attributes, builtin variables, atomics).
CUDA_PRELUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_prelude.h")
#: Device-only CUDA without the SDK.
CUDA_FLAGS = ("--cuda-device-only", "-nocudainc", "-nocudalib", "-include", CUDA_PRELUDE)
#: GPU architecture used when the flags name none (``--cuda-gpu-arch=`` / ``--offload-arch=``).
CUDA_DEFAULT_ARCH = "sm_70"

INSTALL_HINT = "install it with `apt-get install clang-22` or point $PROGRAML_CLANG at a clang 22 binary"

# What programl asks of clang: textual IR on stdout, no warnings.
_EMIT_IR = ("-S", "-emit-llvm", "-w")


class CompilerError(GraphCreationError):
    """A compiler's error, printed in the compiler's own form: ``file:line:col: error: message``.

    ``message`` is the compiler's text after ``error:``; ``path``, ``line`` and ``column`` locate it when known.
    """

    def __str__(self) -> str:
        where = ":".join(str(part) for part in (self.path, self.line, self.column) if part is not None)
        return f"{where}: error: {self.message}" if where else f"error: {self.message}"


def _major_version(binary: str, tool: str = "clang") -> int | None:
    try:
        output = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(rf"{tool} version (\d+)", output)
    return int(match.group(1)) if match else None


@functools.cache
def find_tool(tool: str, explicit: str | None, variable: str, hint: str) -> str:
    """The path of ``tool`` (clang or flang) of major version 22: ``explicit`` (the value of ``$variable``) when
    given, else ``<tool>-22`` or ``<tool>`` on the PATH.

    Raises:
        UnsupportedCompiler: None was found, or ``explicit`` is no executable of version 22 (``hint`` says how to
            install one).
    """
    if explicit:
        path = shutil.which(explicit) or (explicit if os.access(explicit, os.X_OK) else None)
        if not path:
            raise UnsupportedCompiler(f"${variable}={explicit} is not an executable; {hint}")
        major = _major_version(path, tool)
        if major != CLANG_MAJOR:
            message = f"{path} is {tool} {major}, but programl reads IR with LLVM {CLANG_MAJOR}; {hint}"
            raise UnsupportedCompiler(message)
        return path
    for name in (f"{tool}-{CLANG_MAJOR}", tool):
        path = shutil.which(name)
        if path and _major_version(path, tool) == CLANG_MAJOR:
            return path
    raise UnsupportedCompiler(f"{tool}-{CLANG_MAJOR} not found; {hint}")


def find_clang() -> str:
    """The path of clang 22.

    Raises:
        UnsupportedCompiler: No clang 22 was found (the message says how to install it).
    """
    return find_tool("clang", os.environ.get("PROGRAML_CLANG") or None, "PROGRAML_CLANG", INSTALL_HINT)


#: Older clangs that :func:`compile_file` runs for a language ``<language>@clang-<major>``: major -> the variable
#: that may point at its binary (else ``clang-<major>`` on ``PATH``).
OLDER_CLANGS = {14: "PROGRAML_CLANG14"}


def split_language(language: str | None) -> tuple[str | None, str | None]:
    """``"c@clang-14"`` -> ``("c", "clang-14")``; a language without ``@`` names no compiler (``("c", None)``)."""
    if language is None or "@" not in language:
        return language, None
    language, compiler = language.split("@", 1)
    return language, compiler


def find_older_clang(major: int) -> str:
    """The path of clang ``major`` (one of :data:`OLDER_CLANGS`).

    Raises:
        UnsupportedCompiler: ``major`` is not one of them, or no such clang was found.
    """
    if major not in OLDER_CLANGS:
        supported = ", ".join(f"clang-{m}" for m in (CLANG_MAJOR, *OLDER_CLANGS))
        raise UnsupportedCompiler(f"clang-{major} is not a supported compiler (supported: {supported})")
    variable = OLDER_CLANGS[major]
    explicit = os.environ.get(variable) or None
    hint = f"install it with `apt-get install clang-{major}` or point ${variable} at a clang {major} binary"
    return _find_major("clang", major, explicit, variable, hint)


@functools.cache
def _find_major(tool: str, major: int, explicit: str | None, variable: str, hint: str) -> str:
    if explicit:
        path = shutil.which(explicit) or (explicit if os.access(explicit, os.X_OK) else None)
        if not path:
            raise UnsupportedCompiler(f"${variable}={explicit} is not an executable; {hint}")
        found = _major_version(path, tool)
        if found != major:
            raise UnsupportedCompiler(f"{path} is {tool} {found}, not {tool} {major}; {hint}")
        return path
    path = shutil.which(f"{tool}-{major}")
    if path and _major_version(path, tool) == major:
        return path
    raise UnsupportedCompiler(f"{tool}-{major} not found; {hint}")


def language_of(path: str) -> str | None:
    """The clang ``-x`` language of a source file, from its extension (None when it is not a source file)."""
    return LANGUAGES.get(os.path.splitext(path)[1].lower())


# ----------------------------------------------------------------------------------------------------------------
# Flags

# Flags that stop clang before it writes IR to stdout, or make it write elsewhere or as well.
_OUTPUT_FLAGS = frozenset(
    {
        "-o", "--output", "-E", "--preprocess", "-M", "-MM", "-MD", "-MMD", "-MF", "-MJ", "-fsyntax-only", "-###",
        "--analyze", "--precompile", "-fdriver-only", "-save-temps", "-fembed-bitcode",
    }
)  # fmt: skip
_OUTPUT_PREFIXES = ("--output=", "-save-temps=", "-fembed-bitcode=", "-emit-", "--emit-", "-MF", "-MJ")
# Flags whose next argument is a value, not an input file.
_VALUE_FLAGS = frozenset(
    {
        "-I", "-D", "-U", "-include", "-imacros", "-isystem", "-iquote", "-idirafter", "-isysroot", "--sysroot", "-x",
        "-target", "--target", "-Xclang", "-Xpreprocessor", "-mllvm", "-MT", "-MQ", "-arch", "-o", "-MF", "-MJ",
        "-std", "-L", "-l", "-F", "-module-file-info", "-Xlinker", "-Xassembler", "-working-directory",
    }
)  # fmt: skip


def _output_flag(flag: str) -> bool:
    if flag in _OUTPUT_FLAGS or (flag.startswith("-o") and not flag.startswith("-objcmt")):
        return True
    return flag != "-emit-llvm" and flag.startswith(_OUTPUT_PREFIXES)


def check_flags(flags: Sequence[str], path: str | None = None) -> None:
    """Reject flags that change what or where clang writes (programl reads clang's IR from its standard output).

    ``-S``, ``-c`` and ``-emit-llvm`` are accepted (programl asks for textual IR anyway; ``-S`` wins over ``-c``).

    Raises:
        CompilerError: A flag such as ``-o``, ``-E``, ``-M``, ``-fsyntax-only``, ``-emit-ast`` or ``-save-temps``
            (also behind ``-Xclang``).
    """
    for index, flag in enumerate(flags):
        if not isinstance(flag, str):
            raise CompilerError(f"compiler flags must be strings, got {type(flag).__name__} {flag!r}", path)
        previous = flags[index - 1] if index else ""
        if previous in _VALUE_FLAGS and previous not in ("-Xclang", "-o"):
            continue  # a value (-D -o is a macro named -o, which clang would reject itself)
        if _output_flag(flag):
            raise CompilerError(
                f"unsupported compiler flag '{flag}': it changes clang's output, which programl reads as textual "
                "LLVM IR from clang's standard output (remove it)",
                path,
            )


def _wants_errors(flags: Sequence[str]) -> bool:
    return any(f in ("-Werror", "-pedantic-errors") for f in flags)


def _language_flags(language: str | None, flags: Sequence[str]) -> list[str]:
    if language is None:
        return []
    result = ["-x", language]
    if language == "cl":
        result += OPENCL_FLAGS
    elif language == "c" and not _wants_errors(flags):
        result += C_COMPAT_FLAGS
    elif language == "cuda":
        result += CUDA_FLAGS
        if not any(f.startswith(("--cuda-gpu-arch", "--offload-arch")) for f in flags):
            result.append(f"--cuda-gpu-arch={CUDA_DEFAULT_ARCH}")
    return result


def inputs_of(args: Sequence[str]) -> list[str]:
    """The input files among clang arguments: the arguments that are neither flags nor flag values."""
    inputs = []
    for index, arg in enumerate(args):
        previous = args[index - 1] if index else ""
        if arg.startswith("-") and arg != "-" or previous in _VALUE_FLAGS:
            continue
        inputs.append(arg)
    return inputs


# ----------------------------------------------------------------------------------------------------------------
# Running the compiler

_DIAGNOSTIC = re.compile(
    r"^(?P<file>[^\n]*?):(?P<line>\d+):(?P<column>\d+): (?:fatal )?error: (?P<message>[^\n]*)$", re.M
)
_OUT_OF_MEMORY = (
    "out of memory",
    "Allocation failed",
    "std::bad_alloc",
    "Cannot allocate memory",
    "failed to map segment from shared object",
    "memory exhausted",
)
_STDIN_NAMES = ("<stdin>", "-", "standard input")  # clang, flang
_CRASH = ("PLEASE submit a bug report", "Stack dump:")
_TOOL_PREFIX = re.compile(r"^(?:[\w./+-]*(?:clang|flang)[\w.+-]*: )?(?:fatal )?error: ")


def _error_from_stderr(stderr: str, path: str | None, returncode: int, tool: str = "clang") -> CompilerError:
    """One line for a failed compiler run: its first error, or what killed it."""
    if any(marker in stderr for marker in _OUT_OF_MEMORY):
        return CompilerError(f"{tool} ran out of memory", path)
    match = _DIAGNOSTIC.search(stderr)
    if match:
        file = match.group("file")
        if path is None or file in _STDIN_NAMES:
            where = path if file in _STDIN_NAMES else file
        else:
            same = os.path.normpath(file) == os.path.normpath(path) or os.path.basename(file) == os.path.basename(path)
            where = path if same else file
        return CompilerError(
            match.group("message").strip(), where, int(match.group("line")), int(match.group("column"))
        )
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return CompilerError(f"{tool} was killed by {name}", path)
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    fatal = next((line for line in lines if line.startswith("LLVM ERROR: ")), None)
    if fatal:  # a fatal error names itself on this line; the stack dump that follows is not the message
        return CompilerError(f"{tool}: {fatal[len('LLVM ERROR: ') :]}", path)
    if any(marker in stderr for marker in _CRASH):
        return CompilerError(f"{tool} crashed (exit status {returncode})", path)
    message = next((line for line in lines if "error" in line), lines[0] if lines else f"{tool} failed")
    return CompilerError(_TOOL_PREFIX.sub("", message), path)


def run_compiler(
    command: list[str],
    stdin: bytes | None,
    path: str | None,
    timeout: float | None,
    tool: str = "clang",
    binary: bool = False,
) -> str | bytes:
    """Run a compiler that writes textual IR (or, with ``binary``, bitcode) to stdout and return it.

    Raises:
        TimeoutError: It ran past ``timeout`` seconds (it is killed).
        CompilerError: It failed (its first error, "ran out of memory", or "crashed"), or wrote no IR.
    """
    if tool == "clang":  # a crash (e.g. out of memory under a worker's limit) must not write reproducers to /tmp
        command = [command[0], "-fno-crash-diagnostics", *command[1:]]  # (flang-22 has no such flag)
    try:
        result = subprocess.run(command, input=stdin, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise TimeoutError(f"{tool} timed out after {timeout:g} s") from error
    except OSError as error:
        raise UnsupportedCompiler(f"cannot run {command[0]}: {error.strerror or error}") from None
    if result.returncode:
        raise _error_from_stderr(result.stderr.decode("utf-8", "replace"), path, result.returncode, tool)
    if binary:
        if not result.stdout:
            raise CompilerError(f"{tool} wrote no LLVM bitcode", path)
        return result.stdout
    try:
        text = result.stdout.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CompilerError(f"{tool} produced non-UTF-8 IR: {error}", path) from None
    if not text.strip():
        raise CompilerError(f"{tool} wrote no LLVM IR", path)
    return text


def compile_source(
    source: str,
    language: str = "c++",
    flags: Sequence[str] = (),
    timeout: float | None = 300,
    system_includes: bool = True,
) -> str:
    """Compile source text (read by clang from stdin, so the module is named ``-``) to textual LLVM IR.

    Args:
        source: The program text.
        language: ``c``, ``c++``, ``cl`` (OpenCL C; :data:`OPENCL_FLAGS` are added) or ``cuda`` (device code;
            :data:`CUDA_FLAGS`).
        flags: More clang flags (``-O2``, ``-I dir``, ``-D X=1`` ...). Without an ``-O`` flag clang compiles at -O0.
        timeout: Seconds before clang is killed (:class:`TimeoutError`).
        system_includes: When False, clang does not search the system include directories (``-nostdlibinc``).

    Raises:
        UnsupportedCompiler: clang 22 is not installed.
        CompilerError: The program does not compile (file, line and column of the first error), or a flag changes
            clang's output (:func:`check_flags`).
    """
    check_flags(flags)
    command = [find_clang(), *_EMIT_IR, *_language_flags(language, flags), *flags, "-o", "-", "-"]
    if not system_includes:
        command.insert(1, "-nostdlibinc")
    return run_compiler(command, source.encode("utf-8"), "-", timeout)


def compile_file(
    path: str,
    flags: Sequence[str] = (),
    language: str | None = None,
    timeout: float | None = 300,
) -> str:
    """Compile a C / C++ / OpenCL / CUDA file to textual LLVM IR (the module is named after ``path``).

    ``language`` may name an older clang (module docstring): ``c@clang-14`` compiles with clang 14 (the IR returned
    is its bitcode as LLVM 22 prints it). Fortran is flang's: :func:`programl.graph_builder.compilers.compile_file`
    compiles a file of any language with its compiler.

    Raises:
        UnsupportedCompiler: clang 22 (or the compiler named) is not installed.
        CompilerError: The file does not compile, its language is unknown, or a flag changes clang's output.
    """
    language, compiler = split_language(language)
    if language == "fortran":
        raise CompilerError("Fortran is compiled by flang-22, not clang (programl.graph_builder.compilers)", path)
    if compiler not in (None, f"clang-{CLANG_MAJOR}"):
        return _compile_with_older_clang(path, flags, language or language_of(path), compiler, timeout)
    language = language or language_of(path)
    if language is None:
        raise CompilerError("unknown source language (expected .c, .cc, .cpp, .cxx, .cl or .cu)", path)
    check_flags(flags, path)
    command = [find_clang(), *_EMIT_IR, *_language_flags(language, flags), *flags, "-o", "-", path]
    return run_compiler(command, None, path, timeout)


def _compile_with_older_clang(
    path: str, flags: Sequence[str], language: str | None, compiler: str, timeout: float | None
) -> str:
    """``path`` compiled by ``compiler`` (``clang-<major>`` of :data:`OLDER_CLANGS`) to bitcode, read by LLVM 22."""
    match = re.fullmatch(r"clang-(\d+)", compiler)
    if not match:
        raise UnsupportedCompiler(f"{compiler} is not a supported compiler (expected clang-<major>)")
    if language is None:
        raise CompilerError("unknown source language (expected .c, .cc, .cpp, .cxx, .cl or .cu)", path)
    check_flags(flags, path)
    binary = find_older_clang(int(match.group(1)))
    command = [binary, "-c", "-emit-llvm", "-w", *_language_flags(language, flags), *flags, "-o", "-", path]
    bitcode = run_compiler(command, None, path, timeout, binary=True)
    from programl.graph_builder.llvm import parse_bitcode

    module = parse_bitcode(bitcode, path)
    try:
        return str(module)
    finally:
        module.close()


def _explicit_language(args: Sequence[str]) -> str | None:
    language = None
    for index, arg in enumerate(args):
        if arg == "-x" and index + 1 < len(args):
            language = args[index + 1]
        elif arg.startswith("-x") and len(arg) > 2:
            language = arg[2:]
    return language


def _read_ir_for_clang(path: str) -> bytes:
    """An ``.ll`` file as LLVM 22 reads it: legacy spellings upgraded, named after ``path`` when it names nothing."""
    from programl.graph_builder.llvm_parse import _upgrade_legacy_attributes

    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError as error:
        raise CompilerError(f"cannot read: {error.strerror or error}", path) from None
    text = _upgrade_legacy_attributes(text)
    if not re.search(r"^source_filename\s*=", text, re.M):
        # On the first line, so that clang's line numbers stay those of the file.
        text = f"source_filename = {_ir_string(path)} {text}"
    return text.encode("utf-8")


def _ir_string(value: str) -> str:
    return '"' + "".join(c if " " <= c <= "~" and c not in '"\\' else f"\\{ord(c):02X}" for c in value) + '"'


def compile_args(args: Sequence[str], timeout: float | None = 300, system_includes: bool = True) -> str:
    """Run clang with the caller's arguments (which name exactly one input) and return its textual IR.

    C inputs get :data:`C_COMPAT_FLAGS` and CUDA inputs :data:`CUDA_FLAGS`, as in :func:`compile_file`. An ``.ll``
    input is upgraded as ``from_llvm_ir`` upgrades it, then given to clang on stdin.

    Raises:
        CompilerError: Several inputs ("expected exactly one compiler job", as programl 0.3.2 said), a flag that
            changes clang's output, or clang's first error.
    """
    args = list(args)
    inputs = inputs_of(args)
    path = inputs[0] if len(inputs) == 1 else None
    check_flags(args, path)
    if len(inputs) > 1:
        raise CompilerError(
            "unable to handle compilation, expected exactly one compiler job "
            f"(got {len(inputs)} inputs: {' '.join(inputs)}; build each file with its own argument list)"
        )
    explicit = _explicit_language(args)
    language = explicit or (language_of(path) if path else None)
    stdin = None
    if path and explicit is None and os.path.splitext(path)[1].lower() == ".ll":
        stdin = _read_ir_for_clang(path)
        position = args.index(path)
        args[position : position + 1] = ["-x", "ir", "-"]
        language = None
    extra = _language_flags(language, args)[2:]  # the language's flags; its -x is the caller's (or the suffix)
    command = [find_clang(), *_EMIT_IR, *extra, *args, "-o", "-"]
    if not system_includes:
        command.insert(1, "-nostdlibinc")
    return run_compiler(command, stdin, path, timeout)
