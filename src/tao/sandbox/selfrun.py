"""Starting tao itself (or pip) as a child process, never code from the working folder (SPEC S10).

``python -m tao`` puts the working folder first on ``sys.path``; ``PYTHONPATH``,
``PYTHONSTARTUP``, ``PYTHONHOME``, ``LD_PRELOAD`` and their kind choose what an
interpreter loads before tao's first line. The web page is started in a project
folder, with the user's whole environment and API keys: a repository that holds a
``tao.py``, ``click.py`` or ``sitecustomize.py`` would run in tao's stead.

So every Python tao starts of its own is:

- the interpreter tao runs under (``sys.executable``), in isolated mode ``-I``: no
  working folder or script folder on ``sys.path``, no ``PYTHON*`` variables, no user
  site-packages (so no ``usercustomize``);
- started in a fresh, empty, owner-only folder (:func:`empty_folder`), not the working
  folder, so nothing relative to the working folder is read by accident;
- given an environment without loader variables (:func:`loader_free_environment`):
  ``-I`` already ignores ``PYTHON*``, but the child's own children (a shell, a compiler
  pip runs) would not, and ``LD_PRELOAD`` acts before Python exists.

Why a child process and not a thread of the server: a resumed run may load the
embedded model, run tools for minutes and be stopped with its process group; in a
child it can neither block nor crash the page, and the page can end it by pid.
pytest and MCP servers are started by their own tools (:mod:`tao.tools.tests`,
:mod:`tao.tools.mcp`) inside the sandbox; this module is for tao and pip.

    process = subprocess.Popen(tao_command("resume", run_id), cwd=folder,
                               env=loader_free_environment())
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

#: Variables whose name starts so choose code a process loads: Python's own and the
#: dynamic linker's (glibc ``LD_*``, macOS ``DYLD_*``).
LOADER_PREFIXES: tuple[str, ...] = ("PYTHON", "LD_", "DYLD_", "PERL5", "RUBY", "NODE_")
#: Single variables that make a shell, libc or another runtime load or run something.
LOADER_NAMES: frozenset[str] = frozenset(
    {"BASH_ENV", "ENV", "PERLLIB", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH",
     "HOSTALIASES", "RESOLV_HOST_CONF", "MALLOC_CONF", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
     "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "CDPATH"}
)  # fmt: skip


def python_command(*arguments: str) -> list[str]:
    """The interpreter tao runs under, isolated (``-I``), with ``arguments``."""
    return [sys.executable, "-I", *arguments]


def tao_command(*arguments: str) -> list[str]:
    """``tao ARGUMENTS`` as the installed package, whatever the working folder holds."""
    return python_command("-m", "tao", *arguments)


def loader_variable(name: str) -> bool:
    """Whether ``name`` is a variable that chooses code a process loads or runs."""
    upper = name.upper()
    return upper in LOADER_NAMES or upper.startswith(LOADER_PREFIXES)


def loader_free_environment(
    environ: Mapping[str, str] | None = None, **extra: str
) -> dict[str, str]:
    """A copy of ``environ`` (default: this process's) without loader variables, plus ``extra``.

    Everything else is kept: a resumed run needs the user's API keys, ``TAO_HOME`` and
    ``TAO_DATABASE_URL``, as the run itself had them; a relative ``TAO_HOME`` or
    ``TAO_POLICY`` is made absolute against this process's working folder.
    """
    source = os.environ if environ is None else environ
    kept = {name: value for name, value in source.items() if not loader_variable(name)}
    for name in FOLDER_SETTINGS:  # the child starts in another folder: keep the same files
        value = kept.get(name)
        if value and not Path(value).expanduser().is_absolute():
            kept[name] = str(Path(value).expanduser().absolute())
    kept.update(extra)
    return kept


#: tao's settings that name a file or folder: relative, they would mean another place in a
#: child started in an empty folder (seen: the web page's Approve with ``TAO_HOME=.tao``
#: resumed from a run log that did not hold the run).
FOLDER_SETTINGS = ("TAO_HOME", "TAO_POLICY")


def empty_folder(prefix: str = "tao-child-") -> Path:
    """A new empty folder only its owner can enter: a child's working folder."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def remove_folder(folder: Path) -> None:
    """Remove a folder :func:`empty_folder` made (and whatever a child left there)."""
    shutil.rmtree(folder, ignore_errors=True)
