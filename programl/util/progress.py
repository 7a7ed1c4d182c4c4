"""Progress bars and progress lines on stderr: the one helper of the package (docs/spec/design.md#command-line).

* :func:`progress` wraps an iterable in a tqdm bar on stderr. There is no bar when it is disabled (``-q``, a
  non-main DDP process), when stderr is not a terminal (a redirected log gets no carriage returns), or when the
  total is known and below ``min_total`` (a batch of one file needs no bar).
* :func:`message` prints one line on stderr without breaking a bar that is being drawn.

Importing this module imports neither torch nor tqdm (``programl --help`` stays fast).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

__all__ = ["is_terminal", "message", "progress"]


def is_terminal(stream=None) -> bool:
    """Whether ``stream`` (default: stderr) is a terminal; False for a closed stream or one without ``isatty``."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def progress(
    items: Iterable,
    total: int | None = None,
    description: str = "",
    enabled: bool = True,
    unit: str = "it",
    min_total: int = 0,
) -> Iterator:
    """Yield ``items``, drawing a tqdm bar on stderr when it helps (module docstring).

    Args:
        items: What to iterate over.
        total: The number of items, when known (None: a counter without a bar).
        description: The bar's label.
        enabled: False for no bar (``-q``, non-main DDP processes).
        unit: What an item is called ("batch", "file", "graph" ...).
        min_total: No bar when ``total`` is known and smaller (the command-line tools use 2).
    """
    if not enabled or not is_terminal(sys.stderr) or (total is not None and total < min_total):
        yield from items
        return
    from tqdm import tqdm

    with tqdm(items, total=total, desc=description, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True) as bar:
        yield from bar


def message(line: str, enabled: bool = True) -> None:
    """Print ``line`` on stderr without breaking a progress bar (nothing when ``enabled`` is False)."""
    if not enabled:
        return
    from tqdm import tqdm

    tqdm.write(line, file=sys.stderr)
