"""Refuse a project's pytest options that write outside it or load code by name (SPEC S10, S11).

``run_tests`` executes the project's pytest configuration, which the model may have
written. Options in ``addopts`` (and a few ini keys) can send reports anywhere on disk
(``--junitxml=/home/u/.bashrc``), move pytest's temp or cache folder, or load a plugin
by module name (``-p evil``, or a warning filter ``-W ignore::evil.Warn`` /
``filterwarnings`` whose category lives in a project module), which is code execution
that the approval of a test file never showed. The sandbox makes writes outside the
project fail anyway; this check gives the model a clear reason instead of a confusing
crash, and keeps the refusal when tao runs without a sandbox.

Checked: ``pytest.toml`` and ``.pytest.toml`` (``[pytest]``, read by pytest 9 before the
others), ``pytest.ini``, ``.pytest.ini``, ``pyproject.toml`` (``[tool.pytest.ini_options]``
and ``[tool.pytest]``), ``tox.ini`` (``[pytest]``) and ``setup.cfg`` (``[tool:pytest]``) in
every folder from the test file's up to the project root: more than pytest reads, never less.
"""

from __future__ import annotations

import configparser
import importlib.util
import os
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tao.errors import ToolError

#: Options whose value is a file or folder pytest (or a common plugin) writes or reads.
PATH_OPTIONS = frozenset(
    {"--junitxml", "--junit-xml", "--resultlog", "--result-log", "--basetemp", "--log-file",
     "--debug", "--report-log", "--html", "--json-report-file", "--confcutdir", "--rootdir",
     "-c", "--config-file", "--cov-report", "--cov-config", "--log-file-path"}
)  # fmt: skip
#: Ini keys (``-o key=value`` or in the file) naming a path pytest writes.
PATH_KEYS = frozenset({"cache_dir", "log_file", "junit_xml", "pythonpath", "testpaths"})
#: Options that import a module named in their value: a plugin by name.
CODE_OPTIONS = frozenset({"-p", "--plugin", "--pdbcls"})
#: Options whose value is a warning filter ``action:message:category:module:line``: a
#: category ``pkg.mod.Name`` imports ``pkg.mod`` (as the ``filterwarnings`` ini key does).
WARNING_OPTIONS = frozenset({"-W", "--pythonwarnings"})
#: Options that take a value as the next word when not written with ``=``.
_WITH_VALUE = PATH_OPTIONS | CODE_OPTIONS | WARNING_OPTIONS | {"-o", "--override-ini"}


#: Every configuration file pytest finds by name (pytest 9 reads ``pytest.toml`` and
#: ``.pytest.toml`` first), and for TOML ones the tables that hold its options.
CONFIG_NAMES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml",
                "tox.ini", "setup.cfg")  # fmt: skip
TOML_TABLES = {
    "pyproject.toml": (("tool", "pytest"), ("tool", "pytest", "ini_options")),
    "pytest.toml": (("pytest",),),
    ".pytest.toml": (("pytest",),),
}


def _table(data: object, keys: tuple[str, ...]) -> dict[str, object]:
    """``data[keys[0]][keys[1]]…`` when each step is a table, else empty."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _ini_values(path: Path) -> Iterator[tuple[str, str]]:
    """``(key, value)`` of the pytest section of one config file; unreadable: nothing."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    if path.name in TOML_TABLES:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return
        for keys in TOML_TABLES[path.name]:
            for key, value in _table(data, keys).items():
                if isinstance(value, list):
                    joined = "\n".join if key == "filterwarnings" else shlex.join
                    value = joined(str(v) for v in value)
                if isinstance(value, str):
                    yield key, value
        return
    section = {"setup.cfg": "tool:pytest", "tox.ini": "pytest"}.get(path.name, "pytest")
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    if parser.has_section(section):
        yield from parser.items(section)


def _config_files(root: Path, test: Path) -> Iterator[Path]:
    folder = test.parent
    while True:
        for name in CONFIG_NAMES:
            if (folder / name).is_file():
                yield folder / name
        if folder == root or root not in folder.parents:
            return
        folder = folder.parent


def _outside(root: Path, value: str) -> bool:
    """Whether a path value (``xml:report.xml`` forms included) leaves the project, symlinks
    followed: ``--junitxml=out/r.xml`` where ``out`` (or ``r.xml``) links to HOME leaves it."""
    value = value.split(":", 1)[1] if ":" in value and not value.startswith("/") else value
    if not value:
        return False
    real = Path(os.path.realpath(root))
    target = Path(os.path.realpath(root / os.path.expanduser(value)))
    return target != real and real not in target.parents


def _inside(root: Path, location: str | None) -> bool:
    if not location:
        return False
    real, target = Path(os.path.realpath(root)), Path(os.path.realpath(location))
    return target == real or real in target.parents


def _project_module(root: Path, test: Path, category: str) -> str | None:
    """The module a warning filter's ``category`` imports, when that is not the
    installation's: not found by the interpreter, found inside the project, or shadowed by
    a ``NAME.py``/``NAME/`` in a folder pytest puts on the import path (the test's folders
    up to the project root). ``None``: a built-in or installed category."""
    module = category.strip().rpartition(".")[0]
    if not module:
        return None  # a built-in warning class: nothing is imported
    top = module.split(".")[0]
    folder = test.parent
    while folder == root or root in folder.parents:
        if (folder / f"{top}.py").exists() or (folder / top).is_dir():
            return module
        folder = folder.parent
    try:
        spec = importlib.util.find_spec(top)  # a top-level name: finds, executes nothing
    except (ImportError, ValueError):
        return module
    if spec is None:
        return module
    places = [spec.origin, *(spec.submodule_search_locations or [])]
    return module if any(_inside(root, place) for place in places) else None


def _check_warning_filter(root: Path, test: Path, where: str, value: str) -> None:
    parts = value.split(":")
    module = _project_module(root, test, parts[2]) if len(parts) > 2 else None
    if module is not None:
        raise ToolError(
            f"run_tests refuses {where}: the warning filter {value.strip()!r} imports "
            f"{module!r}, a module that is not installed, to find its category: code loaded "
            "by name; use a built-in or installed warning class"
        )


def _words(addopts: str) -> list[str]:
    try:
        return shlex.split(addopts)
    except ValueError:
        return addopts.split()


def _check_option(root: Path, test: Path, where: str, name: str, value: str) -> None:
    if name in WARNING_OPTIONS:
        _check_warning_filter(root, test, where, value)
    if name in CODE_OPTIONS and not value.startswith("no:"):
        raise ToolError(
            f"run_tests refuses {where}: {name} {value} loads a module by name as a plugin; "
            "remove it from the pytest configuration"
        )
    if name in PATH_OPTIONS and _outside(root, value):
        raise ToolError(
            f"run_tests refuses {where}: {name}={value} points outside the project; "
            "pytest may only write inside it"
        )
    if name in ("-o", "--override-ini"):
        key, _, setting = value.partition("=")
        _check_key(root, test, where, key.strip(), setting.strip())


def _check_key(root: Path, test: Path, where: str, key: str, value: str) -> None:
    if key == "filterwarnings":
        for line in value.splitlines():
            if line.strip():
                _check_warning_filter(root, test, where, line)
    if key in PATH_KEYS and any(_outside(root, word) for word in _words(value)):
        raise ToolError(
            f"run_tests refuses {where}: {key} = {value} points outside the project; "
            "pytest may only write inside it"
        )
    archive = next((w for w in _words(value) if _a_file(root, test, w)), None)
    if key == "pythonpath" and archive is not None:
        raise ToolError(
            f"run_tests refuses {where}: pythonpath = {archive} is a file, which Python "
            "imports code from as a zip archive whatever its name, unseen by the check of "
            "the project's code; name a folder"
        )


def _a_file(root: Path, test: Path, word: str) -> bool:
    """Whether ``word`` names an existing file (not a folder), read relative to the
    project root or any folder from the test's up to it (where a config file may be)."""
    folder = test.parent
    while True:
        if os.path.isfile(os.path.join(folder, os.path.expanduser(word))):
            return True
        if folder == root or root not in folder.parents:
            return os.path.isfile(os.path.join(root, word))
        folder = folder.parent


def _check_addopts(root: Path, test: Path, where: str, addopts: str) -> None:
    words = _words(addopts)
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word.startswith("--") and "=" in word:
            name, _, value = word.partition("=")
        elif word in _WITH_VALUE:
            name, value = word, words[index] if index < len(words) else ""
            index += 1
        elif word.startswith("-") and not word.startswith("--") and len(word) > 2:
            name, value, took_next = _short_cluster(word, words[index : index + 1])
            index += took_next
            if not name:
                continue
        else:
            continue
        _check_option(root, test, where, name, value)


#: pytest's short options that take a value (``-k EXPR``, ``-pNAME``, ``-qp NAME``).
_SHORT_WITH_VALUE = frozenset("kmrcopW")


def _short_cluster(word: str, following: list[str]) -> tuple[str, str, int]:
    """Read ``-qpNAME`` as argparse does: flags, then the first option that takes a value
    with the rest of the word (or the next word) as its value. Returns the option, its
    value and how many following words it used; no value-taking option: ``("", "", 0)``."""
    for position, char in enumerate(word[1:], start=1):
        if char in _SHORT_WITH_VALUE:
            rest = word[position + 1 :]
            if rest:
                return f"-{char}", rest, 0
            return f"-{char}", following[0] if following else "", 1
    return "", "", 0


def check_pytest_config(root: Path, test: Path) -> None:
    """Raise :class:`ToolError` naming the first option that writes outside ``root`` or
    loads a plugin by name, in any pytest configuration between ``test`` and ``root``."""
    for path in _config_files(root, test):
        where = f"an option in {path.relative_to(root).as_posix()}"
        for key, value in _ini_values(path):
            if key == "addopts":
                _check_addopts(root, test, where, value)
            elif key in ("required_plugins", "plugins"):
                continue  # listing requirements loads nothing by itself
            else:
                _check_key(root, test, where, key, value)
