"""Red team, pytest loading project code by name under ``run_tests`` (SPEC S10, S11; issue 26).

A plugin named in ``-p`` was already refused. pytest has other ways to import a module
because a *name* says so, before or beside the tests a person approved: setuptools entry
points (``pytest11``) from any ``*.dist-info``/``*.egg-info`` on ``sys.path``, which a
project or a ``pythonpath =`` folder can hold, and warning filters (``-W``,
``--pythonwarnings``, ``filterwarnings``) whose category ``pkg.Name`` imports ``pkg``.
Each case is a real project run through the real ``run_tests`` tool (real bubblewrap
where installed, a real pytest child); the planted module prints a marker when imported.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tao.errors import ToolError
from tao.tools.tests import test_tools

MARKER = "PLANTED-MODULE-RAN"
PLANT = f"import os\nos.write(1, b'{MARKER}\\n')\nclass Warn(Warning):\n    pass\n"
TEST = "def test_ok():\n    pass\n"


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_ok.py").write_text(TEST)
    return root


def _run(root: Path, path: str = "tests/test_ok.py") -> str:
    (run_tests,) = test_tools(root, timeout_s=60)
    return run_tests.invoke({"path": path})


def _distribution(folder: Path, kind: str) -> None:
    """An installed-looking distribution in ``folder`` whose ``pytest11`` entry point
    names the planted module beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = folder / ("evil-1.0.dist-info" if kind == "dist" else "evil.egg-info")
    meta.mkdir()
    head = "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"
    (meta / ("METADATA" if kind == "dist" else "PKG-INFO")).write_text(head)
    (meta / "entry_points.txt").write_text("[pytest11]\nevil = evilplugin\n")
    (folder / "evilplugin.py").write_text(PLANT)


LAYOUTS: dict[str, Callable[[Path], None]] = {
    "dist-info-at-the-root": lambda root: _distribution(root, "dist"),
    "egg-info-at-the-root": lambda root: _distribution(root, "egg"),
    "dist-info-in-a-pythonpath-folder": lambda root: (
        _distribution(root / "lib", "dist"),
        (root / "pytest.ini").write_text("[pytest]\npythonpath = lib\n"),
    ),
    "egg-info-in-src-on-pythonpath": lambda root: (
        _distribution(root / "src", "egg"),
        (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n'),
    ),
    "dist-info-beside-the-tests": lambda root: _distribution(root / "tests", "dist"),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_entry_point_plugins_load_only_from_the_installation_S11(
    tmp_path: Path, layout: str
) -> None:
    """S11: a ``pytest11`` entry point in the project is never loaded; the tests still run."""
    root = _project(tmp_path)
    LAYOUTS[layout](root)
    output = _run(root)
    assert MARKER not in output
    assert "exited with code 0: all tests passed" in output


def test_installed_plugins_still_load_and_tests_see_the_project_metadata_S11(
    tmp_path: Path,
) -> None:
    """The installation's plugins (pytest-timeout's ``--timeout``, hypothesis) still load,
    and once pytest's plugins are in, a test that reads ``importlib.metadata`` sees the
    project's own distributions as before."""
    root = _project(tmp_path)
    _distribution(root, "dist")
    (root / "tests" / "test_ok.py").write_text(
        "import importlib.metadata, os\n"
        "from hypothesis import given, strategies\n"
        "def test_sees_the_project_distribution():\n"
        "    names = {d.metadata['Name'] for d in importlib.metadata.distributions()}\n"
        "    assert 'evil' in names\n"
        "@given(strategies.integers())\n"
        "def test_hypothesis(n):\n"
        "    assert n == n\n"
    )
    (root / "pytest.ini").write_text("[pytest]\naddopts = --timeout=30\n")
    output = _run(root)
    assert "2 passed" in output, output
    assert "exited with code 0" in output


WARNING_FILTERS = {
    "addopts -W": ("pytest.ini", "[pytest]\naddopts = -W ignore::evilplugin.Warn\n"),
    "addopts -Wvalue": ("pytest.ini", "[pytest]\naddopts = -q -Wignore::evilplugin.Warn\n"),
    "addopts --pythonwarnings=": (
        "tox.ini", "[pytest]\naddopts = --pythonwarnings=error::evilplugin.Warn\n"),
    "ini filterwarnings": (
        "pytest.ini", "[pytest]\nfilterwarnings =\n    error\n    ignore::evilplugin.Warn\n"),
    "pyproject filterwarnings list": (
        "pyproject.toml",
        '[tool.pytest.ini_options]\nfilterwarnings = ["error", "ignore::evilplugin.sub.Warn"]\n'),
    "setup.cfg -o filterwarnings=": (
        "setup.cfg", "[tool:pytest]\naddopts = -o filterwarnings=ignore::evilplugin.Warn\n"),
    "a project module shadowing an installed name": (
        "pytest.ini", "[pytest]\nfilterwarnings = ignore::hypothesis.errors.Warn\n"),
    "a module that does not exist": (
        "pytest.ini", "[pytest]\nfilterwarnings = ignore::nowhere_at_all.Warn\n"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(WARNING_FILTERS))
def test_a_warning_filter_cannot_import_a_project_module_S11(tmp_path: Path, case: str) -> None:
    """S11: a warning category ``pkg.Name`` makes pytest import ``pkg``; one that is not
    the installation's (a project module, one shadowing an installed package, one that
    does not exist) is refused, in every configuration file and option form."""
    root = _project(tmp_path)
    (root / "evilplugin.py").write_text(PLANT)
    (root / "hypothesis.py").write_text(PLANT)
    name, text = WARNING_FILTERS[case]
    (root / name).write_text(text)
    with pytest.raises(ToolError, match="warning filter") as refused:
        _run(root)
    assert "not installed" in str(refused.value)


def test_built_in_and_installed_warning_categories_are_accepted_S11(tmp_path: Path) -> None:
    """The ordinary filters a real project writes keep working."""
    root = _project(tmp_path)
    (root / "pytest.ini").write_text(
        "[pytest]\naddopts = -W ignore::DeprecationWarning\nfilterwarnings =\n    error\n"
        "    ignore::pytest.PytestUnraisableExceptionWarning\n"
        "    ignore:old:hypothesis.errors.HypothesisDeprecationWarning\n"
    )
    output = _run(root)
    assert "exited with code 0: all tests passed" in output


def test_a_report_path_through_a_symlink_out_of_the_project_is_refused_S10(
    tmp_path: Path,
) -> None:
    """S10: ``--junitxml=out/r.xml`` where ``out`` (or the file) links outside the project
    writes outside it; judged on the resolved path, not the spelling."""
    root = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, root / "out")
    os.symlink(tmp_path / "bashrc", root / "report.xml")
    for option in ("--junitxml=out/r.xml", "--junitxml=report.xml", "--basetemp=out/t"):
        (root / "pytest.ini").write_text(f"[pytest]\naddopts = {option}\n")
        with pytest.raises(ToolError, match="points outside the project"):
            _run(root)
    assert list(elsewhere.iterdir()) == []
    assert not (tmp_path / "bashrc").exists()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pytest.ini", "[pytest]\npythonpath = vendor.dat\n"),
        ("pytest.ini", "[pytest]\npythonpath = lib tests/../vendor.dat\n"),
        ("pyproject.toml", '[tool.pytest.ini_options]\npythonpath = ["vendor.dat"]\n'),
        ("tox.ini", "[pytest]\naddopts = -o pythonpath=vendor.dat\n"),
    ],
)
def test_a_pythonpath_entry_that_is_a_file_is_refused_S11(
    tmp_path: Path, name: str, text: str
) -> None:
    """S11: Python imports from a zip archive on ``sys.path`` whatever its name, so
    ``pythonpath = vendor.dat`` would run code from a file the code fingerprint counts as
    data (the model could rewrite it unasked after one approval). Refused; folders pass."""
    import zipfile

    root = _project(tmp_path)
    (root / "lib").mkdir()
    with zipfile.ZipFile(root / "vendor.dat", "w") as archive:
        archive.writestr("vendored.py", PLANT)
    (root / "tests" / "test_ok.py").write_text("import vendored\n" + TEST)
    (root / name).write_text(text)
    with pytest.raises(ToolError, match="is a file"):
        _run(root)
    (root / name).write_text(text.replace("vendor.dat", "lib"))
    (root / "lib" / "vendored.py").write_text("VALUE = 1\n")
    assert "exited with code 0" in _run(root)
