"""The errors of the LLVM optimisation environment (docs/gym.md#errors).

Each is a :class:`~programl.exceptions.ProgramlError`, so a caller (and the CLI) reports it in one line. A missing
tool (``opt-22``, ``llc-22``, ``llvm-stress-22``, ``csmith``) is an :class:`~programl.exceptions.UnsupportedCompiler`
whose message says how to install it.
"""

from __future__ import annotations

from programl.exceptions import ProgramlError

__all__ = ["BenchmarkError", "EpisodeError", "GymError", "ObservationError", "PassError"]


class GymError(ProgramlError):
    """Base class of the environment's errors."""


class BenchmarkError(GymError, ValueError):
    """A benchmark URI is malformed or names nothing, or its program cannot be read, compiled or verified.

    The message names the file (or the URI) first.
    """


class PassError(GymError):
    """An action failed: ``opt`` crashed, ran past its timeout or its memory limit, or rejected the module.

    :meth:`~programl.gym.env.LlvmEnv.step` does not raise it: it ends the episode and puts the message in
    ``info["error_details"]``. Searches that call the lower-level :func:`programl.gym.state.apply_pipeline` see it.
    """


class ObservationError(GymError):
    """An observation or reward cannot be computed for this state (e.g. ``llc`` cannot emit an object for the
    module's target, or it crashed)."""


class EpisodeError(GymError, RuntimeError):
    """The environment is used out of order: :meth:`step` before :meth:`reset`, or after the episode ended."""
