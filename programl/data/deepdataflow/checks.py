"""The checks of a data-set recipe's fields (:mod:`programl.data.deepdataflow.recipe`): each value's JSON type, its
paths (relative, normalised, inside their place), its compiler flags (what the command line's flags pass, and none that
loads or runs other code or writes a file) and its URLs, one line naming the field when one is wrong. The ``archive``
source kind (:mod:`programl.data.deepdataflow.sources`) checks its fields with the same functions.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlparse

from programl.exceptions import ProgramlError

__all__ = [
    "DOWNLOADS",
    "check_defines",
    "check_describing",
    "check_field",
    "check_recipe_flags",
    "check_relative_path",
    "check_settings",
    "check_strings",
    "check_url",
]


#: Keys any source may have that only describe it (strings).
_DESCRIBING = frozenset({"name", "description", "notes", "provenance", "licence", "license", "homepage"})
#: The folder of ``--data`` that archive sources download into: the one place a recipe writes to.
DOWNLOADS = "downloads"

#: Flags that make a compiler load or run other code: plugins, pass-throughs to the compiler's internals or to other
#: tools (``-Xclang -load -Xclang x.so``, ``-mllvm -load=x.so``, ``-Wl,``, ``-Wp,``), other programs, tool sets or
#: configuration files (``-B``, ``--config``, ``-specs``, ``-ccc-``, ``--driver-mode``), response files (``@file``).
_CODE_FLAGS = (
    "-fplugin", "-fpass-plugin", "-load", "-plugin", "-add-plugin", "-X", "-mllvm", "--mllvm", "-B", "--prefix",
    "--config", "-specs", "--specs", "-wrapper", "-ccc-", "--gcc-toolchain", "--gcc-install-dir", "--gcc-triple",
    "-resource-dir", "--resource-dir", "-cc1", "-fc1", "--driver-mode", "-fuse-ld", "--ld-path", "@",
)  # fmt: skip
_PASS_ON = re.compile(r"-W[A-Za-z]+,")  # -Wl,..., -Wa,..., -Wp,... hand flags to another tool
#: Flags that make a compiler write files (beside those :func:`~programl.graph_builder.clang.check_flags` refuses)
#: or embed a named file in its output.
_FILE_FLAGS = (
    "-ftime-trace", "-fsave-optimization-record", "-foptimization-record", "-fcrash-diagnostics", "-fmodule",
    "-fimplicit-module", "-fcxx-modules", "-fproc-stat-report", "-fstack-usage", "-fthinlto", "-fdump",
    "-fdebug-module-writer", "-fembed", "-gen-", "-module", "-serialize-diagnostics", "--serialize-diagnostics",
    "-save-", "--save-", "-dump", "-working-directory", "-J",
)  # fmt: skip
#: The flags a recipe may give, each one argument (a value joined to its flag).
_RECIPE_FLAG = re.compile(
    r"-O(?:[0-4sgz]|fast)?"
    r"|-D[A-Za-z_][A-Za-z0-9_]*(?:\([A-Za-z0-9_,.]*\))?(?:=\S*)?|-U[A-Za-z_][A-Za-z0-9_]*"
    r"|-std=[A-Za-z0-9+_.-]+|-f[a-z]\S*|-W[a-z]\S*|-m[a-z]\S*|-cl-[a-z]\S*"
    r"|-g(?:[0-3]|gdb[0-3]?|lldb|dwarf(?:-[2-5])?|line-tables-only|line-directives-only|column-info|no-[a-z-]+)?"
    r"|--(?:target|cuda-gpu-arch|offload-arch)=[A-Za-z0-9_.,:+-]+"
    r"|-(?:w|pedantic|pedantic-errors|ansi|pthread|nostdinc|nostdinc\+\+|nostdlibinc|nobuiltininc|cpp|nocpp)"
)
#: A define, ``-D`` and this: a macro name, its parameters, ``=`` and a value without spaces.
_DEFINE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\([A-Za-z0-9_,.]*\))?(?:=\S*)?")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f]")


def _shown(value: Any) -> str:
    """``repr(value)``, at most 60 characters (a received value is shown escaped, on one line)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_field(value: Any, kind: type | tuple[type, ...], what: str, minimum: int | None = None) -> Any:
    """``value`` if it is of the JSON type ``kind`` (an ``int`` is no ``bool``; a ``str`` is not empty; an ``int`` is
    at least ``minimum``).

    Raises:
        ProgramlError: One line naming ``what`` and the type wanted.
    """
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a non-empty string", int: "an integer", list: "a list", dict: "an object"}
    wanted = " or ".join(names.get(k, k.__name__) for k in kinds)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ProgramlError(f"{what} must be {wanted}, not {type(value).__name__} {_shown(value)}")
    if isinstance(value, str) and not value:
        raise ProgramlError(f"{what} must be {wanted}")
    if isinstance(value, int) and minimum is not None and value < minimum:
        raise ProgramlError(f"{what} must be at least {minimum}, not {value}")
    return value


def check_strings(value: Any, what: str, empty: bool = True) -> list[str]:
    """``value`` if it is a list of non-empty strings (not empty unless ``empty``).

    Raises:
        ProgramlError: One line naming ``what``.
    """
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value) or not (empty or value):
        wanted = "a list of strings" if empty else "a non-empty list of strings"
        raise ProgramlError(f"{what} must be {wanted}, not {_shown(value)}")
    return value


def check_relative_path(value: Any, what: str) -> str:
    """``value`` if it is a relative, normalised POSIX path (no leading ``/``, no ``.``, ``..`` or empty part, no
    ``\\`` or control character), so that it stays inside the folder it is joined to.

    Raises:
        ProgramlError: One line naming ``what``.
    """
    check_field(value, str, what)
    parts = value.split("/")
    if value.startswith("/") or "\\" in value or _UNPRINTABLE.search(value) or {"", ".", ".."} & set(parts):
        raise ProgramlError(
            f"{what} {_shown(value)} must be a relative path inside its folder (no leading '/', no '.', '..' or "
            "empty part)"
        )
    return value


def check_recipe_flags(flags: Any, what: str) -> tuple[str, ...]:
    """``flags`` if it is a list of compiler flags a recipe may give (module docstring).

    A recipe's flags pass :func:`programl.graph_builder.clang.check_flags` (what the command line's flags pass) and
    more, because a recipe comes from someone else: a flag that makes a compiler load or run other code, or write or
    embed a file, is refused, and so is any flag outside the families a recipe needs (:data:`_RECIPE_FLAG`). Each
    flag is one argument: a value is joined to its flag (``-DN=4``, ``-std=c99``, ``--target=spir64``), so no flag
    takes the next argument as its value.

    Raises:
        ProgramlError: One line naming ``what`` and the flag.
    """
    from programl.graph_builder.clang import CompilerError, check_flags

    check_strings(flags, what)
    for flag in flags:
        if _UNPRINTABLE.search(flag) or flag != flag.strip() or any(c.isspace() for c in flag):
            raise ProgramlError(f"{what}: flag {_shown(flag)} must be one argument, without spaces")
        if flag.startswith(_CODE_FLAGS) or _PASS_ON.match(flag):
            raise ProgramlError(f"{what}: flag {_shown(flag)} is refused: it makes the compiler load or run other code")
        if flag.startswith(_FILE_FLAGS):
            raise ProgramlError(f"{what}: flag {_shown(flag)} is refused: it makes the compiler write or embed files")
    try:
        check_flags(flags)
    except CompilerError as error:
        raise ProgramlError(f"{what}: {error.message}") from None
    for flag in flags:
        if not _RECIPE_FLAG.fullmatch(flag):
            raise ProgramlError(
                f"{what}: flag {_shown(flag)} is not one a recipe may give (one argument each, a value joined to "
                "its flag: -O2, -DN=4, -UX, -std=c99, -f..., -W..., -m..., -g, -cl-..., --target=...)"
            )
    return tuple(flags)


def check_settings(value: Any, what: str) -> list[tuple[str, ...]]:
    """``value`` if it is a non-empty list of settings, each a list of flags (:func:`check_recipe_flags`).

    Raises:
        ProgramlError: One line naming ``what``.
    """
    if not isinstance(value, list) or not value:
        raise ProgramlError(f"{what} must be a non-empty list of settings (lists of flags), not {_shown(value)}")
    return [check_recipe_flags(setting, f"{what}[{i}]") for i, setting in enumerate(value)]


def check_defines(value: Any, what: str) -> list[str]:
    """``value`` if it is a list of macro definitions (``NAME``, ``NAME=value``, ``NAME(a,b)=value``; no spaces).

    Raises:
        ProgramlError: One line naming ``what``.
    """
    for define in check_strings(value, what):
        if not _DEFINE.fullmatch(define):
            raise ProgramlError(
                f"{what}: {_shown(define)} is not a macro definition (NAME or NAME=value, without spaces)"
            )
        check_recipe_flags([f"-D{define}"], what)
    return value


def check_url(value: Any, what: str) -> str:
    """``value`` if it is an ``http://`` or ``https://`` URL (a recipe is shared: a ``file://`` URL would name a
    file of the machine that builds it).

    Raises:
        ProgramlError: One line naming ``what``.
    """

    check_field(value, str, what)
    parsed = urlparse(value)
    if parsed.scheme.lower() not in ("http", "https") or not parsed.netloc or _UNPRINTABLE.search(value):
        raise ProgramlError(f"{what} {_shown(value)} must be an http:// or https:// URL")
    return value


def _check_sha256(value: Any, what: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ProgramlError(f"{what} must be 64 lower-case hex digits, not {_shown(value)}")
    return value


def check_describing(source: dict[str, Any], where: str) -> None:
    """The describing keys of a source (:data:`_DESCRIBING`), if present, are non-empty strings."""
    for key in sorted(_DESCRIBING & set(source)):
        check_field(source[key], str, f"{where}: '{key}'")
