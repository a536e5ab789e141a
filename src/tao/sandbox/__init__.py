"""One OS sandbox for every child process tao starts (SPEC S10).

Children (pytest for ``run_tests``, MCP servers over stdio) run under bubblewrap: a
read-only system, the project read-only except ``Sandbox.writable``, a private /tmp and
HOME, no network unless asked, their own PID namespace (no view of tao's /proc), an
allow-list environment, and rlimits. The public API:

    from tao.sandbox import Sandbox, availability

    if not availability().available:   # no bwrap, no user namespaces, macOS, TAO_SANDBOX=off
        ...                              # ask a person before executing project code
    Sandbox(network=False, pass_env=("DATABASE_URL",), writable=(Path("/p/out"),))
"""

from __future__ import annotations

from tao.sandbox.command import Confined, NotConfinable, confine
from tao.sandbox.notice import startup_notice
from tao.sandbox.probe import Availability, SandboxUnavailable, availability, must_confine
from tao.sandbox.settings import SERVER_LIMITS, Limits, Sandbox

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
