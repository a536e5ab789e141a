"""The one place a child's command line is wrapped in bubblewrap (SPEC S10).

    confined = confine(["python", "-m", "pytest"], Sandbox(), readable=[project], cwd=project)
    subprocess.Popen(confined.argv, env=confined.env, start_new_session=True, ...)

The wrapper gives the child its own user, PID, mount, IPC, UTS, cgroup and (unless
``Sandbox.network``) network namespaces, drops every capability, forbids new user
namespaces inside, starts it in a new terminal session (no ``TIOCSTI`` typing into
tao's terminal) and kills it with tao (``--die-with-parent``: when the *thread* that
started it ends, so callers start children from a thread that waits for them). The
filesystem is :func:`tao.sandbox.mounts.mount_args`; the environment is
:func:`tao.sandbox.environment.child_environment`, handed to bubblewrap as its own
environment (bubblewrap passes it on), so no value appears on a command line. Limits are
set by util-linux ``prlimit`` inside the sandbox, which then executes the command:
no ``preexec_fn`` in threaded tao.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tao.sandbox.environment import child_environment
from tao.sandbox.mounts import mount_args
from tao.sandbox.settings import Limits, Sandbox

#: Where bubblewrap and prlimit are looked for before PATH (Debian, Fedora, Arch, Alpine).
SYSTEM_BIN = "/usr/bin:/bin:/usr/sbin:/sbin"


@dataclass(frozen=True, slots=True)
class Confined:
    """A wrapped command: run ``argv`` with exactly ``env`` as its environment."""

    argv: tuple[str, ...]
    env: dict[str, str]


class NotConfinable(Exception):
    """The sandbox's programs are missing, or the command cannot be found."""


def tool(name: str) -> str:
    """The absolute path of a system program (``bwrap``, ``prlimit``), or NotConfinable."""
    found = shutil.which(name, path=SYSTEM_BIN) or shutil.which(name)
    if found is None:
        raise NotConfinable(f"{name} is not installed")
    return found


def _task_count() -> int:
    """Tasks (threads) running on the machine now: /proc/loadavg's ``running/total``."""
    try:
        with open("/proc/loadavg", encoding="ascii") as loadavg:
            return int(loadavg.read().split()[3].split("/")[1])
    except (OSError, IndexError, ValueError):
        return 4096


def limit_args(limits: Limits) -> list[str]:
    """``prlimit --cpu=… --as=… --fsize=… --nproc=… --core=0 --`` for ``limits``."""
    args = [tool("prlimit"), "--core=0"]
    if limits.cpu_s is not None:
        args.append(f"--cpu={limits.cpu_s}")
    if limits.memory_bytes is not None:
        args.append(f"--as={limits.memory_bytes}")
    if limits.file_bytes is not None:
        args.append(f"--fsize={limits.file_bytes}")
    if limits.processes is not None:
        args.append(f"--nproc={_task_count() + limits.processes}")
    return [*args, "--"]


def executable(name: str, env: Mapping[str, str]) -> Path:
    """The program ``name`` names, found on the child's PATH the way ``execvp`` would."""
    found = shutil.which(name, path=env.get("PATH")) if "/" not in name else name
    if found is None or not os.path.isfile(found):
        raise NotConfinable(f"{name}: command not found")
    return Path(os.path.abspath(found))


def _program_folder(program: Path) -> Path:
    """What to make readable for a program: its virtual environment when it sits in one's
    ``bin`` (the interpreter reads ``pyvenv.cfg`` and ``lib`` beside it), else its folder."""
    parent = program.parent
    if parent.name == "bin" and (parent.parent / "pyvenv.cfg").is_file():
        return parent.parent
    return parent


def confine(
    argv: Sequence[str],
    sandbox: Sandbox,
    *,
    cwd: Path,
    readable: Iterable[Path] = (),
    extra_env: Mapping[str, str] | None = None,
    unset: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> Confined:
    """``argv`` wrapped in bubblewrap under ``sandbox``, run in ``cwd``.

    ``readable`` folders are bound read-only, with ``cwd`` and the program's own folder
    (or virtual environment); ``extra_env`` is set on top of the allow-list, and
    ``unset`` names are removed inside the sandbox (a caller whose launcher adds
    variables of its own, like the MCP SDK's, takes them back out this way).
    """
    if not argv:
        raise NotConfinable("empty command")
    env = child_environment(sandbox, environ, extra_env)
    program = executable(argv[0], env)
    shown = [cwd, *readable, _program_folder(program)]
    command = [
        tool("bwrap"), "--unshare-all", "--unshare-user", "--disable-userns",
        "--share-net" if sandbox.network else "--unshare-net",
        "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox",
    ]  # fmt: skip
    command += mount_args(
        shown, sandbox.writable, tmp_bytes=sandbox.limits.tmp_bytes, network=sandbox.network
    )
    kept = set(env)
    for name in sorted(set(unset) - kept):
        command += ["--unsetenv", name]
    command += ["--chdir", str(cwd), "--", *limit_args(sandbox.limits), str(program), *argv[1:]]
    return Confined(tuple(command), env)
