"""The one line tao says at start when its children would run unconfined (SPEC S10).

A run that can start child processes (``run_tests``, an MCP server over stdio) and
has no sandbox must not run them in silence: the line names why, and what happens
instead. With ``--sandbox require`` (``TAO_SANDBOX=require``) the run does not start.
"""

from __future__ import annotations

from tao.sandbox.probe import SandboxUnavailable, availability, mode
from tao.sandbox.settings import MODE_ENV


def startup_notice(children: list[str]) -> str | None:
    """The line to show before a run whose ``children`` (what it may start, in words) would run
    unconfined; ``None`` when there are none or they are confined.

    Raises :class:`SandboxUnavailable` when the sandbox is required and missing."""
    if not children:
        return None
    found = availability()
    if found.available:
        return None
    if mode() == "require":
        raise SandboxUnavailable(
            f"{MODE_ENV}=require, and {found.reason}: not starting {', '.join(children)}"
        )
    return (
        f"tao: no sandbox ({found.reason}): {', '.join(children)} will run with your full "
        "authority; each test execution needs your approval"
    )
