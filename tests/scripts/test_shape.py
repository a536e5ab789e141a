"""scripts/shape.py measures what issue 11 promised; each check must be able to fail.

A shape report that always passes would let the code drift back unnoticed, so every check is
driven over a small tree written to a temporary folder: once where it passes, once where it
fails, and the command itself runs in a child process for its exit status and JSON.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import ModuleType
from typing import Protocol

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "shape.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shape", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["shape"] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


shape = _load()

AGENT = '''
class Agent:
    """A small agent: everything else goes through its config."""

    def __init__(self, model, tools=None, *, config=None, **settings: Unpack[Settings]):
        self.model = model
'''


def write_tree(base: Path, files: dict[str, str]) -> Path:
    """A package ``tao`` under ``base`` holding ``files`` (paths relative to the package)."""
    root = base / "tao"
    every = {"__init__.py": "", "agent.py": AGENT, **files}
    for name, text in every.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


class Measured(Protocol):
    """What a test reads of one row of the report (``shape.Check``)."""

    name: str
    value: int
    where: str
    details: tuple[str, ...]
    found: bool

    @property
    def passed(self) -> bool: ...


def check(root: Path, prefix: str) -> Measured:
    """The one check of ``root``'s report whose name starts with ``prefix``."""
    report: list[Measured] = shape.measure(root)
    (found,) = [c for c in report if c.name.startswith(prefix)]
    return found


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# -- a clean tree passes everything ---------------------------------------------------------


def test_a_clean_tree_passes_every_check(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {"loop.py": "def step(x):\n    return x + 1\n"})
    report = shape.measure(root)
    assert [c.name for c in report if not c.passed] == []
    assert len(report) == 11


# -- duplicated runs ------------------------------------------------------------------------

#: Eight lines of logic; ``{n}`` gives each copy its own names, strings and numbers.
LOGIC = '''
import json
from pathlib import Path


def load_{n}(path_{n}):
    """Read one file; a docstring never counts as copied code."""
    # comments never count either
    text_{n} = Path(path_{n}).read_text(encoding="utf-{n}")
    if not text_{n}:
        return {{}}
    data_{n} = json.loads(text_{n})
    for key_{n} in sorted(data_{n}):
        data_{n}[key_{n}] = str(data_{n}[key_{n}]) + "{n}"
    return (
        data_{n}
    )
'''


def test_copies_with_other_names_strings_and_numbers_are_pairs(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {f"m{n}.py": LOGIC.format(n=n) for n in (1, 2)})
    result = check(root, "duplicated")
    assert result.value == 1
    assert result.passed
    # From the ``def`` line to the last line before the lone bracket (the imports, the
    # docstring and the comment do not count); each side names its own lines.
    assert result.where == "m1.py:6-16 ~ m2.py:6-16 shape"


def test_more_pairs_than_the_limit_fail(tmp_path: Path) -> None:
    # Six copies make C(6, 2) = 15 pairs of files: over the limit (shape.MAX_DUPLICATE_PAIRS).
    files = {f"m{n}.py": LOGIC.format(n=n) for n in range(1, 7)}
    result = check(write_tree(tmp_path, files), "duplicated")
    assert result.value == 15 > shape.MAX_DUPLICATE_PAIRS
    assert not result.passed
    assert len(result.details) == 15


def test_two_files_sharing_two_runs_are_one_pair(tmp_path: Path) -> None:
    other = """

def other(items):
    items.append(1)
    items.sort()
    total = sum(items)
    while total > 10:
        total -= items.pop()
    print(total, items)
    return total
"""
    files = {"a.py": LOGIC.format(n=1) + other, "b.py": other + LOGIC.format(n=2)}
    result = check(write_tree(tmp_path, files), "duplicated")
    assert result.value == 1
    assert result.where == "a.py:6-16 ~ b.py:16-26 shape (+1 more run)"


def test_identical_copies_are_not_marked_shape(tmp_path: Path) -> None:
    same = LOGIC.format(n=7)
    root = write_tree(tmp_path, {"a.py": same, "b.py": same})
    assert check(root, "duplicated").where == "a.py:6-16 ~ b.py:6-16"


def test_names_must_be_renamed_consistently(tmp_path: Path) -> None:
    # ``x = f(x)`` and ``y = g(z)`` have one token shape but not one meaning.
    first = "def f(a, b):\n" + "".join(f"    a = a + {i}\n    b = b * a\n" for i in range(4))
    second = "def f(a, b):\n" + "".join(f"    a = b + {i}\n    b = a * b\n" for i in range(4))
    root = write_tree(tmp_path, {"a.py": first, "b.py": second})
    assert check(root, "duplicated").value == 0


def test_imports_lists_and_tables_are_not_copies(tmp_path: Path) -> None:
    kinds = {
        "imports": "".join(f"from pkg{i} import name{i}\n" for i in range(8)),
        "table": "T = {\n" + "".join(f'    "k{i}": {i},\n' for i in range(8)) + "}\n",
        "fields": "class Row:\n" + "".join(f"    f{i}: int\n" for i in range(8)),
        "arguments": "f(\n" + "".join(f"    a{i}=a{i},\n" for i in range(8)) + ")\n",
    }
    files = {f"{kind}_{side}.py": text for kind, text in kinds.items() for side in "ab"}
    assert check(write_tree(tmp_path, files), "duplicated").value == 0


def test_runs_of_small_dataclasses_declare_data_and_are_not_copies(tmp_path: Path) -> None:
    """Field declarations don't count; the logic in the same classes still does."""
    declared = "".join(
        f"@dataclass(frozen=True)\nclass C{i}:\n    step: int\n    text: str = ''\n\n"
        for i in range(4)
    )
    assert check(write_tree(tmp_path / "d", {"a.py": declared, "b.py": declared}), "dup").value == 0
    logic = (
        "class C:\n    step: int\n\n    def f(self, x):\n        y = x + 1\n"
        "        if y > 2:\n            y = g(y)\n        z = h(y, x)\n"
        "        for i in z:\n            print(i)\n        return z\n"
    )
    assert check(write_tree(tmp_path / "l", {"a.py": logic, "b.py": logic}), "dup").value == 1


def test_an_idiom_in_more_than_eight_places_is_left_out(tmp_path: Path) -> None:
    files = {f"m{n}.py": LOGIC.format(n=n) for n in range(1, 10)}
    result = check(write_tree(tmp_path, files), "duplicated")
    assert result.value == 0
    assert result.details[-1].startswith("left out: ")


# -- Any ------------------------------------------------------------------------------------


def test_any_counts_names_in_code_only(tmp_path: Path) -> None:
    module = '''
        from typing import Any
        # Any in a comment does not count
        def f(x: Any, y: dict[str, Any], z: dict[
            str, Any
        ]) -> "Any":
            """Any in a docstring does not count."""
            return {"Any": x}
    '''
    root = write_tree(tmp_path, {"m.py": module})
    uses, dicts = check(root, "uses of Any"), check(root, "uses of dict")
    assert (uses.value, dicts.value) == (4, 2)
    assert uses.passed
    assert dicts.passed


def test_too_many_any_fails(tmp_path: Path) -> None:
    module = "from typing import Any\n" + "".join(
        f"v{i}: dict[str, Any] = {{}}\n" for i in range(11)
    )
    root = write_tree(tmp_path, {"m.py": module, "n.py": "from typing import Any\n" * 49})
    uses, dicts = check(root, "uses of Any"), check(root, "uses of dict")
    assert (uses.value, dicts.value) == (61, 11)
    assert not uses.passed
    assert not dicts.passed
    assert uses.where.startswith("n.py (49), m.py (12)")


# -- sizes ----------------------------------------------------------------------------------


def test_a_long_module_is_not_a_failure(tmp_path: Path) -> None:
    """A module holds one idea whatever its length (issue 29 dropped the line cap)."""
    root = write_tree(tmp_path, {"sub/big.py": "x = 1\n" * 5000})
    assert all(c.passed for c in shape.measure(root) if c.name != "Agent.__init__ parameters")


@pytest.mark.parametrize(("count", "passed"), [(12, True), (13, False)])
def test_modules_at_the_top_level(tmp_path: Path, count: int, passed: bool) -> None:
    files = {f"m{i}.py": "" for i in range(count - 1)} | {"sub/deep.py": ""}  # + agent.py
    result = check(write_tree(tmp_path, files), "modules at the top")
    assert (result.value, result.passed) == (count, passed)


@pytest.mark.parametrize(("depth", "passed"), [(9, True), (10, False)])
def test_the_longest_import_chain_is_named(tmp_path: Path, depth: int, passed: bool) -> None:
    files = {f"m{i}.py": f"import tao.m{i + 1}\n" for i in range(depth - 1)}
    files[f"m{depth - 1}.py"] = "def late():\n    import tao.m0\n"  # lazy: not a link
    result = check(write_tree(tmp_path, files), "longest import chain")
    assert (result.value, result.passed) == (depth, passed)
    assert result.where.startswith("tao.m0 -> tao.m1")


def test_private_names_imported_across_modules_are_counted(tmp_path: Path) -> None:
    files = {
        "a.py": "_hidden = 1\n_other = 2\n",
        "b.py": "from tao.a import _hidden, _other\nfrom .a import _hidden as h\n",
        "c.py": "def f():\n    from tao.a import _hidden\n",
        "d.py": "from tao import _sub\n",  # a private module, not a private name
        "_sub.py": "",
    }
    result = check(write_tree(tmp_path, files), "private names")
    assert result.value == 4
    assert result.passed is False


@pytest.mark.parametrize(("body", "passed"), [(79, True), (80, False)])
def test_longest_function_names_the_method(tmp_path: Path, body: int, passed: bool) -> None:
    method = "    def run(self):\n" + "        x = 1\n" * body
    root = write_tree(tmp_path, {"m.py": "\n\nclass Runner:\n" + method})
    result = check(root, "longest function")
    assert result.value == body + 1
    assert result.where == "m.py:4 Runner.run"
    assert result.passed is passed


# -- imports --------------------------------------------------------------------------------


def test_a_module_level_cycle_fails_and_is_named(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "a.py": "from tao.b import g\n",
            "b.py": "from . import c\n",
            "c.py": "import tao.a\n",
        },
    )
    result = check(root, "import cycles")
    assert result.value == 1
    assert not result.passed
    assert result.where == "tao.a -> tao.b -> tao.c -> tao.a"


def test_imports_for_type_checkers_or_inside_functions_make_a_cycle_too(tmp_path: Path) -> None:
    """Issue 29: no circle, not even through a type-only or in-function import."""
    root = write_tree(
        tmp_path,
        {
            "a.py": "from tao import b\n",
            "b.py": """
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from tao.a import Thing
                def late():
                    from .a import Thing
                    return Thing
            """,
        },
    )
    result = check(root, "import cycles")
    assert not result.passed
    assert result.where == "tao.a -> tao.b -> tao.a"


def test_the_web_page_and_servers_never_import_the_cli(tmp_path: Path) -> None:
    clean = {"cli/__init__.py": "", "cli/render.py": "", "ui/__init__.py": ""}
    assert check(write_tree(tmp_path / "ok", clean), "ui/server").passed
    bad = {
        **clean,
        "ui/pages.py": "def page():\n    from ..cli import render\n    return render\n",
        "server/app.py": "import tao.cli.render\n",
        "eval/run.py": "from tao.cli import render\n",  # not a server: allowed
    }
    result = check(write_tree(tmp_path / "bad", bad), "ui/server")
    assert result.details == (
        "server/app.py:1 imports tao.cli",
        "ui/pages.py:2 imports tao.cli",
    )
    assert not result.passed


# -- Agent ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("extra", "passed"), [(6, True), (7, False)])
def test_agent_init_parameters(tmp_path: Path, extra: int, passed: bool) -> None:
    # model, tools, *args, **kwargs, plus ``extra`` keyword-only ones; ``self`` left out.
    keywords = ", ".join(f"k{i}=None" for i in range(extra))
    agent = f"class Agent:\n    def __init__(self, model, tools, *args, {keywords}, **kw):\n"
    root = write_tree(tmp_path, {"agent.py": agent + "        pass\n"})
    result = check(root, "Agent")
    assert (result.value, result.passed) == (4 + extra, passed)
    assert result.where == "agent.py:2 Agent.__init__"


@pytest.mark.parametrize(
    ("kwargs", "untyped"),
    [
        ("**settings: Unpack[Settings]", 0),
        ("**settings: typing.Unpack[Settings]", 0),
        ("**settings: 'Unpack[Settings]'", 0),
        ("max_steps: int = 8", 0),
        ("**settings: object", 1),
        ("**settings", 1),
        ("**settings: dict[str, int]", 1),
    ],
)
def test_agent_takes_no_untyped_settings(tmp_path: Path, kwargs: str, untyped: int) -> None:
    """Issue 29: ``Agent(max_step=5)`` must be an error a type checker sees."""
    agent = f"class Agent:\n    def __init__(self, model, {kwargs}):\n        pass\n"
    result = check(write_tree(tmp_path, {"agent.py": agent}), "untyped **kwargs")
    assert (result.value, result.passed) == (untyped, not untyped)
    assert result.where == "agent.py:2 Agent.__init__"


def test_a_missing_agent_fails(tmp_path: Path) -> None:
    result = check(write_tree(tmp_path, {"agent.py": "class Runner:\n    pass\n"}), "Agent")
    assert not result.passed
    assert result.where == "no class Agent"


# -- the command ----------------------------------------------------------------------------


def test_the_command_exits_0_when_clean_and_1_when_a_check_fails(tmp_path: Path) -> None:
    clean = write_tree(tmp_path / "ok", {})
    done = run_script("--root", str(clean))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split() == ["check", "value", "limit", "result", "where"]
    assert done.stdout.rstrip().endswith("shape: 11 passed, 0 failed")

    many = {f"m{i}.py": "" for i in range(12)}  # and agent.py
    big = write_tree(tmp_path / "bad", many)
    done = run_script("--root", str(big), "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    failed = [c for c in report["checks"] if not c["passed"]]
    assert report["passed"] is False
    assert [(c["name"], c["value"], c["details"]) for c in failed] == [
        ("modules at the top level", 13, sorted(["agent.py", *(f"m{i}.py" for i in range(12))]))
    ]


def test_bad_usage_exits_2(tmp_path: Path) -> None:
    assert run_script("--root", str(tmp_path / "missing")).returncode == 2
    assert run_script("--no-such-flag").returncode == 2
    broken = write_tree(tmp_path, {"broken.py": "def f(:\n"})
    done = run_script("--root", str(broken))
    assert done.returncode == 2
    assert "broken.py" in done.stderr


def test_the_real_tree_is_measured_quickly() -> None:
    """CPU time, not wall time, so a busy machine does not fail it; per line of the tree,
    so the tree growing does not either (about 0.17 ms a line here: Python's tokenizer and
    the duplicate search; the bound catches a check that turns quadratic)."""
    root = REPO / "src" / "tao"
    lines = sum(len(p.read_text("utf-8").splitlines()) for p in root.rglob("*.py"))
    started = time.process_time()
    report = shape.measure(root)
    assert (time.process_time() - started) / lines < 0.4e-3
    assert [c.found for c in report] == [True] * 11
