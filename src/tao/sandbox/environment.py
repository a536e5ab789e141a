"""The environment a sandboxed child gets: an allow-list, never tao's own (SPEC S10).

A scrub by name families always misses an ordinary name (``MY_SETTING=hunter2``),
so children get only what they need to run and what a person passed by name:

- ``PATH``, ``LANG``, ``LC_ALL``, ``LC_CTYPE``, ``TZ`` from tao's environment, when set;
  PATH without its empty or relative entries (:func:`absolute_path`);
- ``HOME`` and ``TMPDIR`` pointing into the sandbox's private, empty ``/tmp``;
- ``PYTHONDONTWRITEBYTECODE=1`` (no ``__pycache__`` in a read-only project);
- the variables named in ``Sandbox.pass_env`` (``--pass-env NAME``), and the ones a
  caller sets explicitly (an MCP server's ``env=``).

The values travel in the child's environment, never on a command line: a command line
is readable by every user of the machine (``/proc/PID/cmdline``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from tao.sandbox.settings import Sandbox

#: Taken from tao's environment when set; none of them carries a secret.
INHERITED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
#: The sandbox's private /tmp, and HOME inside it: empty at every start.
SANDBOX_TMP = "/tmp"  # noqa: S108  # a fresh tmpfs inside the sandbox, not the host's /tmp
SANDBOX_HOME = "/tmp/home"  # noqa: S108
#: PATH when tao has none.
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def absolute_path(path: str | None) -> str:
    """``path`` (a PATH value) with only its absolute entries. An empty entry (``:/bin``,
    a trailing colon) or a relative one (``.``, ``tools``) means the working folder to
    ``execvp``: a program a repository ships would run in place of the one meant."""
    return os.pathsep.join(entry for entry in (path or "").split(os.pathsep) if entry[:1] == "/")


def child_environment(
    sandbox: Sandbox,
    environ: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
    *,
    home: str = SANDBOX_HOME,
    tmp: str = SANDBOX_TMP,
) -> dict[str, str]:
    """The allow-listed environment for a child of ``sandbox`` (see the module docstring).

    ``home`` and ``tmp`` are where HOME and TMPDIR point; an unconfined child
    (no sandbox available) gets host folders made for it instead.
    """
    source = os.environ if environ is None else environ
    env = {name: source[name] for name in INHERITED if name in source}
    env.setdefault("PATH", DEFAULT_PATH)
    env.update({"HOME": home, "TMPDIR": tmp, "PYTHONDONTWRITEBYTECODE": "1"})
    env.update({name: source[name] for name in sandbox.pass_env if name in source})
    env.update(extra or {})
    env["PATH"] = absolute_path(env.get("PATH")) or DEFAULT_PATH
    return env
