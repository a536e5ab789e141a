"""What a sandboxed child may do: network, environment names, writable folders, limits (SPEC S10).

These are a person's settings (``--pass-env``, ``--allow-net``, ``--sandbox``, a Python
caller's ``Sandbox(...)``), never the model's: nothing the model writes reaches them. They
are plain data so a run's config can record them and ``tao resume`` rebuild them;
``pass_env`` holds variable *names* only, so no value is ever written to the run log.
What happens where no sandbox can be made is the process's choice, not a run's
(:class:`ProcessSettings`, ``$TAO_SANDBOX``).

    Sandbox(network=False, pass_env=("DATABASE_URL",), writable=(Path("out"),))
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from tao.state.setting import Setting, refuse_bad, setting

#: A variable name a person may pass through: a shell identifier, nothing that could be an option.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: The variable that chooses the sandbox mode of the process (:func:`tao.sandbox.probe.mode`).
MODE_ENV = "TAO_SANDBOX"
Mode = Literal["auto", "require", "off"]
MODES: tuple[Mode, ...] = get_args(Mode)

GIB = 1024**3
MIB = 1024**2


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Resource limits of every process in the sandbox (rlimits, set by ``prlimit``).

    ``None`` leaves a limit as tao's own. Each limit bounds one process (its
    children inherit it), except ``processes``, which the kernel counts per user.
    """

    cpu_s: int | None = 600
    """CPU seconds per process (RLIMIT_CPU): a busy loop ends with SIGXCPU/SIGKILL."""
    memory_bytes: int | None = 4 * GIB
    """Address space per process (RLIMIT_AS): a runaway allocation gets MemoryError/ENOMEM.
    Node.js and other runtimes that reserve large address ranges may need ``None``."""
    file_bytes: int | None = 1 * GIB
    """Largest file a process may write (RLIMIT_FSIZE): a huge write gets EFBIG."""
    processes: int | None = 512
    """Tasks (processes and threads) the sandbox may add beyond those already running
    (RLIMIT_NPROC, which the kernel counts per user, so the limit is set to the system's
    current task count plus this). The kernel exempts uid 0, so when tao runs as root its
    children run as uid 65534 and the limit is that uid's current task count plus this."""
    tmp_bytes: int = 512 * MIB
    """Size of the sandbox's private ``/tmp`` (a tmpfs; HOME is a folder in it)."""

    def __post_init__(self) -> None:
        for name in ("cpu_s", "memory_bytes", "file_bytes", "processes", "tmp_bytes"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ValueError(f"sandbox limit {name} must be a positive integer, not {value!r}")


#: Limits for a long-lived MCP server: no CPU-time or address-space cap (a server may run
#: for hours, and Node.js reserves far more address space than it uses).
SERVER_LIMITS = Limits(cpu_s=None, memory_bytes=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sandbox:
    """How one kind of child process (pytest, an MCP server) is confined.

    The system is read-only, the project and the interpreter readable, ``/tmp`` and
    HOME private and empty, and only ``writable`` can be written on the host.
    """

    network: bool = False
    """Share tao's network (``--share-net``); default: a private, empty network namespace."""
    pass_env: tuple[str, ...] = ()
    """Names of tao's environment variables the child also gets, beyond the allow-list
    (PATH, LANG, LC_ALL, LC_CTYPE, TZ; HOME and TMPDIR point into the sandbox)."""
    writable: tuple[Path, ...] = ()
    """Host folders the child may write (bound read-write at the same path). Everything
    else, the project included, is read-only or absent."""
    limits: Limits = field(default_factory=Limits)
    """Resource limits of each process in the sandbox."""

    def __post_init__(self) -> None:
        for name in self.pass_env:
            if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
                raise ValueError(f"--pass-env takes a variable name, not {name!r}")
        for folder in self.writable:
            if not isinstance(folder, Path) or not folder.is_absolute():
                raise ValueError(f"a writable folder must be an absolute Path, not {folder!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessSettings:
    """Settings of the whole tao process, not of one run, declared as run settings are
    (:mod:`tao.state.setting`): ``tao run`` derives its option from the field. The command
    sets ``$TAO_SANDBOX`` from it for its own process, so every part of tao (the approval
    gate, the tools that start children) reads one answer; nothing records it, and each
    process (a ``tao resume`` included) reads its own environment."""

    sandbox: Mode = setting(
        "auto",
        Setting(
            flag="--sandbox",
            envvar=MODE_ENV,
            choices=MODES,
            any_case=True,
            recorded=False,
            help="Confine child processes with bubblewrap: auto (where possible, else say so "
            "and ask before each test run), require (refuse to run without it), off.",
        ),
    )
    """``auto``: confine where possible, else say so and ask before each test run;
    ``require``: refuse to start a child unconfined; ``off``: never confine (SPEC S10)."""

    def __post_init__(self) -> None:
        refuse_bad(self)
