"""One input or many: the dispatch of the transform ops (docs/spec/python-api.md#transforms, as programl 0.3.2's).

One input (a ``ProgramGraph``, a networkx graph, node-link data) is converted here and now; an iterable of them
gives a lazy iterator through :func:`programl.util.executor.execute`. Anything else, and a bad ``timeout`` or
``chunksize``, is refused at the call (0.3.2, and this package before, returned a generator that failed at its
first ``next()``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from programl.exceptions import GraphTransformError
from programl.proto import ProgramGraph
from programl.util.executor import check_limits, execute

__all__ = ["convert_one_or_many"]

T = TypeVar("T")


def convert_one_or_many(
    fn: Callable[[Any], T],
    inputs: Any,
    timeout: float | None,
    executor: Any,
    chunksize: int | None,
    *,
    one: type | tuple[type, ...] = ProgramGraph,
    what: str = "a ProgramGraph",
) -> T | Iterator[T]:
    """``fn(inputs)`` for one input (an instance of ``one``), else a lazy iterator of ``fn`` over the inputs, in
    input order.

    Raises:
        GraphTransformError: ``inputs`` is neither one input nor an iterable (a str, bytes or mapping that is not
            one input is not taken for an iterable); an item of the iterable that is wrong fails at its own
            ``next()``.
        ValueError: A bad ``timeout`` or ``chunksize``.
    """
    if isinstance(inputs, one):
        return fn(inputs)
    if isinstance(inputs, (str, bytes, bytearray, memoryview, Mapping)) or not isinstance(inputs, Iterable):
        raise GraphTransformError(f"expected {what} or an iterable of them, got {type(inputs).__name__}")
    check_limits(timeout, chunksize)
    return execute(fn, inputs, executor=executor, chunksize=chunksize, timeout=timeout)
