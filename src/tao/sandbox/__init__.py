"""One OS sandbox for every child process tao starts (SPEC S10).

Children (pytest for ``run_tests``, MCP servers over stdio) run under bubblewrap: a
read-only system, the project read-only except ``Sandbox.writable``, a private /tmp and
HOME, no network unless asked, their own PID namespace (no view of tao's /proc), an
allow-list environment, and rlimits. The public API:

    from tao.sandbox import Sandbox, availability

    if not availability().available:   # no bwrap, no user namespaces, macOS, TAO_SANDBOX=off
        ...                              # ask a person before executing project code
    Sandbox(network=False, pass_env=("DATABASE_URL",), writable=(Path("/p/out"),))

Only the settings load with the package; the probe and the wrapper (subprocess,
shutil) load on first use, so building a run's tools costs nothing extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tao.sandbox.settings import SERVER_LIMITS, Limits, Sandbox

if TYPE_CHECKING:
    from tao.sandbox.command import Confined, NotConfinable, confine
    from tao.sandbox.notice import startup_notice
    from tao.sandbox.probe import Availability, SandboxUnavailable, availability, must_confine

_LAZY = {
    "Confined": "command",
    "NotConfinable": "command",
    "confine": "command",
    "startup_notice": "notice",
    "Availability": "probe",
    "SandboxUnavailable": "probe",
    "availability": "probe",
    "must_confine": "probe",
}

__all__ = [
    "SERVER_LIMITS",
    "Availability",
    "Confined",
    "Limits",
    "NotConfinable",
    "Sandbox",
    "SandboxUnavailable",
    "availability",
    "confine",
    "must_confine",
    "startup_notice",
]


def __getattr__(name: str) -> object:
    """Load the probe and the wrapper when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tao.sandbox' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tao.sandbox.{module}"), name)
