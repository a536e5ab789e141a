"""What a sandboxed child can see of the host's files, as bubblewrap mount options (SPEC S10).

Nothing of the host is visible unless bound here, so the default is blindness, not a
list of things to hide:

1. the system, read-only: ``/usr``, ``/etc`` and the ``/bin``, ``/sbin``, ``/lib*``
   links or folders; a fresh ``/proc`` (the sandbox's own PID namespace; its kernel
   settings read-only, and ``/proc/1``, bubblewrap's init, hidden) and ``/dev``;
2. a private ``/tmp`` (a tmpfs of bounded size) with an empty HOME in it;
3. read-only: the Python installation tao runs on (its prefixes and ``sys.path``)
   and the folders the caller names (the project, an MCP server's files);
4. read-write: ``Sandbox.writable`` (the outermost folders only) and nothing else, except
   what inside it runs later outside the sandbox (``.git``, virtual environments, tao's
   own installation, Python's user base), bound read-only again
   (:mod:`tao.sandbox.protected`);
5. masks over secrets that lie inside something bound: ``$TAO_HOME`` and its run log and
   policy, ``~/.ssh``, ``~/.aws``, ``~/.netrc``… (a project or interpreter inside HOME must
   not bring HOME's secrets with it), ``/etc/shadow``.

A ``sys.path`` entry that is HOME itself, or holds HOME or ``$TAO_HOME``, is not bound:
it would show everything below it.
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from tao.paths import default_db_path, default_policy_path, tao_home
from tao.sandbox.environment import SANDBOX_HOME, SANDBOX_TMP
from tao.sandbox.protected import outermost, read_only_again

#: System folders bound read-only (or recreated as the links they are, for merged /usr).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: Files and folders under HOME that hold credentials, history or keys.
HOME_SECRETS = (
    ".ssh", ".aws", ".azure", ".config", ".gnupg", ".docker", ".kube", ".netrc", ".pgpass",
    ".pypirc", ".npmrc", ".git-credentials", ".gitconfig", ".vault-token", ".password-store",
    ".local/share/keyrings", ".bash_history", ".zsh_history", ".python_history", ".terraform.d",
)  # fmt: skip
#: Kernel settings under the sandbox's fresh /proc bound read-only: a process whose host
#: uid is 0 (tao run as root inside a user namespace of its own) would otherwise pass
#: their owner check and set the machine's ``core_pattern`` (a program run as root).
#: ``/proc/sys/user`` stays (bubblewrap's ``--disable-userns`` writes it, for the
#: sandbox's own user namespace only), and ``/proc/sys/net`` (the sandbox's own network).
PROC_READ_ONLY = ("/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
PROC_SYS_OWN = frozenset({"user", "net"})
#: System files no child needs.
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh")


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def secret_paths() -> list[Path]:
    """Everything a child must never read, wherever it is bound from."""
    home = Path.home()
    db = default_db_path()
    found = [tao_home(), db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    found += [default_policy_path(), *(home / name for name in HOME_SECRETS)]
    found += [Path(name) for name in SYSTEM_SECRETS]
    return found


def python_paths() -> list[Path]:
    """The interpreter's prefixes and import path: what ``python -I -m pytest`` needs to read."""
    raw = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *sys.path}
    home, data = _real(Path.home()), _real(tao_home())
    kept = []
    for entry in sorted(raw):
        if not entry or not os.path.isabs(entry) or not os.path.exists(entry):
            continue
        real = _real(Path(entry))
        if real == Path("/") or _under(home, real) or _under(data, real):
            continue  # it would show HOME or tao's data wholesale
        kept.append(Path(entry))
    return kept


def user_base() -> list[Path]:
    """Python's user base (``PYTHONUSERBASE`` or ``~/.local``) as tao's environment names
    it, when it exists: its ``site-packages`` ``.pth`` files and ``usercustomize`` run in
    every interpreter of the person, tao's own included, and its ``bin`` is on their PATH."""
    base = Path(site.getuserbase())
    return [base] if base.is_absolute() and base.is_dir() else []


def _kernel_settings() -> list[str]:
    """``--ro-bind-try`` of the kernel's settings (see :data:`PROC_READ_ONLY`)."""
    try:
        names = sorted(set(os.listdir("/proc/sys")) - PROC_SYS_OWN)
    except OSError:
        names = []
    args: list[str] = []
    for path in (*(f"/proc/sys/{name}" for name in names), *PROC_READ_ONLY):
        args += ["--ro-bind-try", path, path]
    return args


def _system() -> list[str]:
    args: list[str] = []
    for name in SYSTEM:
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    return args


def _binds(option: str, paths: Iterable[Path], covered: list[Path]) -> list[str]:
    """Bind each path (resolved) at its real place, and keep its own name as a link to it."""
    args: list[str] = []
    for path in sorted(set(paths), key=lambda p: (len(p.parts), str(p))):
        real = _real(path)
        if not any(_under(real, done) for done in covered):
            args += [option, str(real), str(real)]
            covered.append(real)
        if path != real and not any(_under(path, done) for done in covered):
            args += ["--symlink", str(real), str(path)]
    return args


def _masks(bound: Sequence[Path]) -> list[str]:
    """Cover every secret that lies inside a bound tree: folders by an empty tmpfs, files by
    ``/dev/null``. A secret folder that holds a bound path is left to its own file masks."""
    args: list[str] = []
    for secret in secret_paths():
        if not os.path.lexists(secret):
            continue
        real = _real(secret)
        if not any(_under(real, tree) for tree in bound):
            continue
        if real.is_dir():
            if not any(_under(tree, real) for tree in bound):
                args += ["--tmpfs", str(real)]
        else:
            args += ["--ro-bind", "/dev/null", str(real)]
    return args


def _resolver(network: bool) -> list[str]:
    """With network, ``/etc/resolv.conf`` may be a link into /run: bind its target too."""
    conf = "/etc/resolv.conf"
    if not network or not os.path.islink(conf):
        return []
    target = os.path.realpath(conf)
    return ["--ro-bind", target, target] if os.path.isfile(target) else []


def _open_folders(binds: list[str], covered: Sequence[Path]) -> list[str]:
    """For a sandbox set up by root for another uid: the folders bubblewrap creates to hold
    a bind (``/tmp/pytest-of-root`` for ``/tmp/pytest-of-root/p/proj``) made 0755 first.
    bubblewrap copies the host folder's mode, and a 0700 one would lock the uid out of
    what is bound below it. Only folders outside every bound tree: a chmod inside one
    would change the host."""
    args: list[str] = []
    made: set[Path] = set()
    for option, dest in zip(binds, binds[2:], strict=False):
        if option not in ("--ro-bind", "--bind", "--symlink"):
            continue
        for folder in reversed(Path(dest).parents):
            if folder in made or folder in (Path("/"), Path(SANDBOX_TMP)):
                continue
            if any(_under(folder, tree) for tree in covered):
                continue
            args += ["--perms", "0755", "--dir", str(folder)]
            made.add(folder)
    return args


def mount_args(
    readable: Iterable[Path],
    writable: Iterable[Path],
    *,
    tmp_bytes: int,
    network: bool,
    shared_tmp: bool = False,
) -> list[str]:
    """The bubblewrap options that build the child's filesystem (see the module docstring).

    ``shared_tmp``: the sandbox is set up by root for an unprivileged uid
    (:mod:`tao.sandbox.command`), so the private ``/tmp`` is 1777, HOME 0777, and the
    folders made to hold binds 0755 (never a host folder)."""
    system = [_real(Path(name)) for name in SYSTEM if os.path.isdir(name)]
    covered = list(system)
    # /proc/1 hidden: bubblewrap's init shares the child's uid for an ordinary user, and its
    # /proc/1/mem would let a test rewrite the process that ties the sandbox to tao's life
    args = [*_system(), "--proc", "/proc", "--tmpfs", "/proc/1", "--dev", "/dev"]
    args += _kernel_settings()
    tmp_mode, home_mode = (["--perms", "1777"], ["--perms", "0777"]) if shared_tmp else ([], [])
    args += [*tmp_mode, "--size", str(tmp_bytes), "--tmpfs", SANDBOX_TMP]
    args += [*home_mode, "--dir", SANDBOX_HOME]
    binds = _binds("--ro-bind", [*python_paths(), *readable], covered)
    rw = outermost(writable)
    binds += _binds("--bind", rw, [])
    if shared_tmp:
        args += _open_folders(binds, [*covered, *rw])
    args += binds
    installed = [_real(path) for path in (*python_paths(), *user_base())]
    for path in read_only_again(rw, installed):  # hooks, venvs: run later, unconfined
        args += ["--ro-bind", str(path), str(path)]
    args += _masks([*covered, *rw])
    return args + _resolver(network)
