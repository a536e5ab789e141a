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
no ``preexec_fn`` in threaded tao. The command itself starts under a seccomp filter
(:mod:`tao.sandbox.seccomp`): no ``ptrace`` of bubblewrap's init or anything else.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tao.sandbox.environment import absolute_path, child_environment
from tao.sandbox.mounts import mount_args
from tao.sandbox.seccomp import wrapper
from tao.sandbox.settings import Limits, Sandbox

#: Where bubblewrap and prlimit are looked for before PATH (Debian, Fedora, Arch, Alpine).
SYSTEM_BIN = "/usr/bin:/bin:/usr/sbin:/sbin"


#: The host uid and gid a sandboxed child runs as when tao runs as root: ``nobody``.
SANDBOX_UID = 65534


@dataclass(frozen=True, slots=True)
class Confined:
    """A wrapped command: run ``argv`` with exactly ``env`` as its environment.

    ``note`` says, in one line for a person, what this sandbox could not do here (a
    root-owned folder the unprivileged uid cannot read, so the child runs as root)."""

    argv: tuple[str, ...]
    env: dict[str, str]
    note: str | None = None


class NotConfinable(Exception):
    """The sandbox's programs are missing, or the command cannot be found."""


def tool(name: str) -> str:
    """The absolute path of a system program (``bwrap``, ``prlimit``), or NotConfinable:
    the system folders first, then PATH's absolute entries, never the working folder."""
    found = shutil.which(name, path=SYSTEM_BIN)
    found = found or shutil.which(name, path=absolute_path(os.environ.get("PATH")))
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


def _tasks_of(uid: int) -> int:
    """Tasks (threads) running now as ``uid``: what the kernel already counts against its
    RLIMIT_NPROC (kernels before 5.14 count per uid machine-wide, later ones per user
    namespace, which is never more)."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
        except OSError:
            continue  # it ended meanwhile
    return count


#: CPU seconds between SIGXCPU (the soft limit, which ends a Python child with exit 152)
#: and SIGKILL (the hard limit, for a child that ignores SIGXCPU).
CPU_GRACE_S = 2


def limit_args(limits: Limits, uid: int | None = None) -> list[str]:
    """``prlimit --cpu=… --as=… --fsize=… --nproc=… --core=0 --`` for ``limits``; ``uid``:
    the child runs as that uid (tao is root), so only its tasks count toward the limit."""
    args = [tool("prlimit"), "--core=0"]
    if limits.cpu_s is not None:
        # soft < hard: SIGXCPU first (the child's exit says "CPU time"), SIGKILL a bit later
        args.append(f"--cpu={limits.cpu_s}:{limits.cpu_s + CPU_GRACE_S}")
    if limits.memory_bytes is not None:
        args.append(f"--as={limits.memory_bytes}")
    if limits.file_bytes is not None:
        args.append(f"--fsize={limits.file_bytes}")
    if limits.processes is not None:
        running = _task_count() if uid is None else _tasks_of(uid)
        args.append(f"--nproc={running + limits.processes}")
    return [*args, "--"]


def executable(name: str, env: Mapping[str, str]) -> Path:
    """The program ``name`` names, found on the child's PATH the way ``execvp`` would,
    through absolute entries only (see :func:`tao.sandbox.environment.absolute_path`)."""
    found = shutil.which(name, path=absolute_path(env.get("PATH"))) if "/" not in name else name
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


def _unreadable(folder: Path) -> bool:
    """Whether the unprivileged uid cannot list and enter ``folder`` (mode bits, owner and
    group as the kernel checks them; ACLs are not read, so an ACL grant still counts as no)."""
    try:
        info = os.stat(folder)
    except OSError:
        return True
    if info.st_uid == SANDBOX_UID:
        bits = info.st_mode >> 6
    elif info.st_gid == SANDBOX_UID:
        bits = info.st_mode >> 3
    else:
        bits = info.st_mode
    return bits & 0o5 != 0o5


def _root_setup(shown: Sequence[Path]) -> tuple[list[str], str | None]:
    """When tao runs as root, the child must not: the kernel exempts uid 0 from the task
    limit (RLIMIT_NPROC), and root's file permissions would apply inside. So bubblewrap,
    as root, builds the mounts (root can reach a project under a 0700 folder), keeps only
    CAP_SETUID/CAP_SETGID, and ``setpriv`` becomes uid/gid 65534 with no groups, no
    capabilities and no new privileges; a second, unprivileged bubblewrap then gives it its
    own user namespace and forbids new ones. The child reads the project as "others" do:
    a folder it cannot enter means running as root, with a note, not a broken run.

    Returns the outer namespace options and the note (``None``: the uid is dropped)."""
    blocked = next((str(folder) for folder in shown if _unreadable(folder)), None)
    if blocked is not None:
        note = (
            f"{blocked} is not readable by uid {SANDBOX_UID}, so the sandboxed child runs as "
            "root and the process limit does not apply (make the project world-readable, "
            "or run tao as an ordinary user)"
        )
        return ["--unshare-all", "--unshare-user", "--disable-userns"], note
    return ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"], None


def _drop_to_nobody(cwd: Path) -> list[str]:
    """The command that turns the root-built sandbox's child into uid 65534 (see above)."""
    uid = str(SANDBOX_UID)
    return [
        tool("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
        "--inh-caps=-all", "--no-new-privs",
        tool("bwrap"), "--unshare-user", "--disable-userns", "--dev-bind", "/", "/",
        "--die-with-parent", "--chdir", str(cwd), "--",
    ]  # fmt: skip


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
    namespaces, note = ["--unshare-all", "--unshare-user", "--disable-userns"], None
    dropping = os.geteuid() == 0
    if dropping:
        namespaces, note = _root_setup(shown)
        dropping = note is None
    command = [
        tool("bwrap"), *namespaces, "--share-net" if sandbox.network else "--unshare-net",
        "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox",
    ]  # fmt: skip
    if dropping:  # all setpriv needs, and it gives them up with root
        command += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    command += mount_args(
        shown,
        sandbox.writable,
        tmp_bytes=sandbox.limits.tmp_bytes,
        network=sandbox.network,
        shared_tmp=dropping,
    )
    kept = set(env)
    for name in sorted(set(unset) - kept):
        command += ["--unsetenv", name]
    command += ["--chdir", str(cwd), "--"]
    if dropping:
        command += _drop_to_nobody(cwd)
    uid = SANDBOX_UID if dropping else None
    command += [*limit_args(sandbox.limits, uid), *wrapper(), str(program), *argv[1:]]
    return Confined(tuple(command), env, note)
