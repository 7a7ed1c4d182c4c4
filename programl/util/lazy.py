"""Lazy package attributes (PEP 562), as the packages use them to stay cheap to import
(docs/spec/design.md#package-layout).

A package names each public attribute's module in a dict and resolves the attribute on first use::

    _EXPORTS = {"GraphView": "programl.dataflow.columnar"}
    __getattr__ = lazy_getattr(globals(), _EXPORTS)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(namespace: dict[str, Any], exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``exports[name]`` and keeps its ``name`` in ``namespace``.

    Args:
        namespace: The package's ``globals()``; a resolved name is stored there, so it is imported once.
        exports: Public name -> the module that defines it.

    Returns:
        The function to assign to the package's ``__getattr__``; it raises ``AttributeError`` for other names.
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
