"""Every error tao raises on purpose, in one tree under :class:`TaoError`.

Three families, because callers handle them differently:

- :class:`ModelFacingError`: what the *model* is told about. The loop never lets one
  escape (SPEC L4): a bad reply, a failing tool or an unknown tool becomes an Observation.
- :class:`ControlSignal`: not a failure at all; the run stops on purpose (it was
  cancelled) and can go on later. A call that waits for a person is a status
  (``awaiting_approval``), never an exception.
- :class:`FatalError`: the run, or the command driving it, cannot go on: a bad model spec,
  a backend that failed, a corrupt run log. ``partial`` carries the run so far, if any.

    try:
        Agent(model="nope:x").run("hi")
    except tao.ModelSpecError as error:
        print(error)

Each module may define a narrower class, always under one of these families. Every class
here is raised somewhere, or is the base of one that is (``tests/test_exports.py``).

Outside the tree, :class:`InternalError` is a bug in tao itself (a broken invariant of the
loop or the engine): it is raised with ``if``, not ``assert``, so ``python -O`` keeps it, and
it is no :class:`TaoError`, so ``except TaoError`` never mistakes a bug for a user's error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class PartialRun(Protocol):
    """What :attr:`FatalError.partial` offers: a :class:`tao.RunResult`, named by its shape.

    Errors sit below every other module (anything may raise them), so this module
    imports nothing from tao; the run so far is described here by what callers read.
    """

    @property
    def run_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def answer(self) -> str | None: ...
    @property
    def steps(self) -> Sequence[object]: ...


class InternalError(AssertionError):
    """A bug in tao: an invariant of the loop or the engine does not hold. Please report it.

    An :class:`AssertionError` (it is one), raised explicitly so that ``python -O``, which
    drops ``assert`` statements, does not drop the check.
    """

    def __init__(self, message: str) -> None:
        super().__init__(f"{message} (a bug in tao; please report it)")


class TaoError(Exception):
    """Base of every error tao raises on purpose; catch this to catch them all."""


# -- what the model is told about ------------------------------------------------------------


class ModelFacingError(TaoError):
    """A problem the model caused and can fix; it becomes an Observation, never a crash."""


class ToolError(ModelFacingError):
    """Raised by a tool to refuse or fail a call; becomes ``Error: ...`` in the Observation."""


# -- control signals: the run stops on purpose ------------------------------------------------


class ControlSignal(TaoError):
    """The run stopped on purpose and can be continued; not a failure."""


class Cancelled(ControlSignal):
    """The run was cancelled by its caller (Ctrl-C, ``cancel()``, task cancellation)."""


# -- fatal: the run or the command cannot go on -----------------------------------------------


class FatalError(TaoError):
    """The run, or the command driving it, cannot go on; ``partial`` is the run so far."""

    def __init__(self, message: str, *, partial: PartialRun | None = None) -> None:
        super().__init__(message)
        self.partial = partial


class ModelSpecError(FatalError, ValueError):
    """A model spec that names no known backend, e.g. ``--model gpt4``."""


class ModelUnavailableError(FatalError):
    """A backend whose runtime, weights or key is missing; the message says how to get it."""


class ModelError(FatalError):
    """A backend failed to answer (network, server error, exhausted replay script)."""


class ModelUnreachableError(ModelError):
    """The backend could not answer at all: no connection, a timeout, a rate limit or server
    error that outlasted the SDK's retries, or a model the server does not know. Another
    model may answer the same request (fallback models), unlike a request it rejected."""


class ToolDefinitionError(FatalError, TypeError):
    """A Python function that cannot become a tool (e.g. an untyped parameter)."""


class UnknownToolSetError(FatalError, ValueError):
    """``--tools`` named a set that does not exist."""


class ConfigError(FatalError, ValueError):
    """A setting, option or file given by a person that cannot be used as it is."""


class UnknownSettingError(ConfigError, TypeError):
    """A setting no :class:`tao.RunConfig` has, e.g. ``Agent(max_step=5)``; the message
    suggests the nearest one. A ``TypeError`` too, as Python's own for a wrong keyword."""


class StoreError(FatalError):
    """The run log cannot be opened, read or written: corrupt, newer schema, missing run."""


class UnknownRunError(StoreError):
    """A run id (or prefix) that names no run, or more than one: the caller mistyped it."""


class StateError(StoreError):
    """A stored checkpoint or config that cannot be read back (corrupt, or from a newer tao)."""


class MissingPackageError(FatalError):
    """An optional feature whose package is not installed; the message gives the pip line."""


class PluginError(FatalError):
    """A plugin (a ``tao.models`` or ``tao.tools`` entry point) that cannot be used: it fails
    to import, gives the wrong kind of object, or takes a built-in's name. The message
    names the plugin and its distribution."""


class ResumeError(FatalError):
    """A run that cannot be continued: it ended, or it is not where it was said to be."""


class RunBusyError(ResumeError):
    """Another process holds the run's lease (SPEC R5): it is acting for the run now, so
    this one changes nothing. ``holder`` names it (``host:pid:random`` for a tao process)."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder


def describe_error(error: Exception) -> str:
    """One line for a failure: tao's own errors speak for themselves."""
    return str(error) if isinstance(error, TaoError) else f"{type(error).__name__}: {error}"
