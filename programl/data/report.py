"""What a data-set build did: one :class:`BuildReport` for the three builders (docs/spec/design.md#package-layout,
docs/spec/datasets.md#builds).

:func:`programl.data.deepdataflow.build_dataset`, :func:`programl.data.poj104.build_poj104` (and
:func:`~programl.data.poj104.build_legacy`) and :func:`programl.data.devmap.build_devmap` (one report per variant)
count the same things: inputs built now, inputs already up to date, inputs that failed (with their one-line
messages), writes of the data set's own files that failed (a full disk) and the wall time. Builders with more to say
(the DeepDataFlow split and label counts, the POJ-104 recipes) extend this dataclass.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BuildReport"]


@dataclass
class BuildReport:
    """Counts of one build.

    Attributes:
        built: Inputs built now.
        skipped: Inputs already up to date (also :attr:`up_to_date`).
        failed: ``(name, error)`` of the inputs that failed (now, or before and not retried).
        errors: Writes of the data set's own files that failed (the manifest, a summary; e.g. a full disk), as
            ``OSError`` s: the build went on, and a rerun redoes what they did not record.
        seconds: Wall time of the build.
    """

    built: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    errors: list[OSError] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def up_to_date(self) -> int:
        return self.skipped

    @property
    def total(self) -> int:
        return self.built + self.skipped + len(self.failed)

    @property
    def ok(self) -> bool:
        """No input failed."""
        return not self.failed

    @property
    def exit_code(self) -> int:
        """The exit status of a command that ran this build: 1 when an input failed or a file of the data set could
        not be written, else 0 (``EXIT_FAILED`` / ``EXIT_OK`` of :mod:`programl.cli.common`)."""
        return 1 if self.failed or self.errors else 0

    def summary(self, noun: str = "inputs") -> str:
        """``"3 built, 4 up to date, 1 failed of 8 inputs in 2.5 s"`` (the start of the build commands' last line)."""
        return (
            f"{self.built:,} built, {self.skipped:,} up to date, {len(self.failed):,} failed of {self.total:,} "
            f"{noun} in {self.seconds:.1f} s"
        )

    def _write(self, where: os.PathLike | str, what: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
        """Run ``what``, a write of the data set's own files at ``where``; an ``OSError`` is kept in :attr:`errors`
        (with ``where`` as its file name when it has none) and False returned, not raised."""
        try:
            what(*args, **kwargs)
        except OSError as error:
            if error.filename is None:
                error = OSError(error.errno, error.strerror or str(error), os.fspath(where))
            self.errors.append(error)
            return False
        return True
