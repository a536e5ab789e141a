"""The small, typed hierarchy of errors tao raises to *callers*.

The loop never raises on model output (SPEC L4): a bad reply becomes an
Observation. These errors are for the people and programs driving tao: a bad
model spec, a missing file, a corrupt run log.

    try:
        Agent(model="nope:x").run("hi")
    except tao.ModelSpecError as error:
        print(error)
"""

from __future__ import annotations


class TaoError(Exception):
    """Base of every error tao raises on purpose; catch this to catch them all."""


class ModelSpecError(TaoError, ValueError):
    """A model spec that names no known backend, e.g. ``--model gpt4``."""


class ModelUnavailableError(TaoError):
    """A backend whose runtime, weights or key is missing; the message says how to get it."""


class ModelError(TaoError):
    """A backend failed to answer (network, server error, exhausted replay script)."""


class ToolError(TaoError):
    """Raised by a tool to refuse or fail a call; becomes ``Error: ...`` in the Observation."""


class ToolDefinitionError(TaoError, TypeError):
    """A Python function that cannot become a tool (e.g. an untyped parameter)."""


class UnknownToolSetError(TaoError, ValueError):
    """``--tools`` named a set that does not exist."""


class StoreError(TaoError):
    """The run log cannot be opened or read: corrupt, newer schema, missing run."""
