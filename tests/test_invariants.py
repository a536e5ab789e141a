"""Broken invariants of the loop and the engine are bugs in tao, and say so (issue 29).

They are raised with ``if``, never ``assert``: ``python -O`` drops assert statements, and
then a broken invariant would pass silently and corrupt a run instead of stopping it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import tao
from tao.errors import InternalError, TaoError
from tao.models.base import ModelReply
from tao.protocol.labels import get_labels
from tao.run.exchange import AskModel, LoopSetup
from tao.run.loop import react
from tao.state.config import RunConfig

SRC = Path(tao.__file__).parent

#: Drives the pure loop to its model call and answers it with the wrong type.
BROKEN_DRIVER = """
from tao.errors import InternalError
from tao.protocol.labels import get_labels
from tao.run.exchange import AskModel, LoopSetup
from tao.run.loop import react
from tao.state.config import RunConfig

setup = LoopSetup(config=RunConfig(), labels=get_labels("en"), tools={},
                  system_prompt="system", protocol="text")
loop = react(setup, "task", clock=lambda: 0.0)
request = loop.send(None)
while not isinstance(request, AskModel):
    request = loop.send(None)
try:
    loop.send("not an answer")
except InternalError as error:
    print("InternalError:", error)
"""


def test_a_broken_invariant_raises_internal_error() -> None:
    setup = LoopSetup(
        config=RunConfig(), labels=get_labels("en"), tools={}, system_prompt="s", protocol="text"
    )
    loop = react(setup, "task", clock=lambda: 0.0)
    request = loop.send(None)  # type: ignore[arg-type]
    while not isinstance(request, AskModel):
        request = loop.send(None)  # type: ignore[arg-type]
    with pytest.raises(InternalError, match=r"answered a model call with str.*a bug in tao"):
        loop.send("not an answer")  # type: ignore[arg-type]


def test_a_broken_invariant_still_raises_under_python_dash_O() -> None:
    """``python -O`` strips asserts; the loop's checks must survive it."""
    done = subprocess.run(
        [sys.executable, "-O", "-c", BROKEN_DRIVER], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "InternalError: the driver answered a model call with str" in done.stdout


def test_an_internal_error_is_no_user_error() -> None:
    """``except TaoError`` handles what a user did; it must not swallow a bug in tao."""
    assert not issubclass(InternalError, TaoError)
    assert issubclass(InternalError, AssertionError)
    assert "please report" in str(InternalError("x"))


def test_no_assert_statement_is_left_in_tao() -> None:
    """Every check in src/tao survives ``python -O``."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(SRC)}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Assert)]  # fmt: skip
    assert found == []


def test_a_model_returning_no_reply_fails_the_run_not_the_process_L4(tmp_path: Path) -> None:
    """A hand-written async model that returns the wrong type is a failed model call:
    the run ends with status error naming it, the process goes on."""

    class Wrong:
        name, supports_stop, supports_grammar, supports_tools = "wrong", True, False, False

        def complete(self, request: object, on_text: object = None) -> ModelReply:
            raise NotImplementedError

        async def acomplete(self, request: object, on_text: object = None) -> object:
            return "just text"

    import asyncio

    agent = tao.Agent(Wrong(), record=False)  # type: ignore[arg-type]
    result = asyncio.run(agent.arun("hi"))
    assert result.status is tao.Status.ERROR
    assert result.error is not None and "returned str, not a ModelReply" in result.error
