"""The ``human`` tool set: ``ask_human`` puts a question to the person at the terminal (SPEC T2).

The question goes to stderr and the answer is read from stdin, so ``--json``
output on stdout stays one clean object. With no person there (stdin closed or
not connected), the model gets a clear ``Error:`` observation instead of a hang
on nothing or a crash.

    (ask_human,) = human_tools(ask=lambda question: "blue")   # scripted, for tests
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from tao.errors import ToolError
from tao.interrupts import read_line
from tao.tools.base import Tool, make_tool

NO_PERSON = "no person is available to answer (stdin closed)"


def ask_terminal(question: str) -> str:
    """Print ``question`` to stderr and read one line from stdin; raise EOFError when closed."""
    print(f"\n[the agent asks] {question}", file=sys.stderr)
    print("your answer> ", end="", file=sys.stderr, flush=True)
    if sys.stdin is None or sys.stdin.closed:
        raise EOFError
    line = read_line()  # no buffer lock held: Ctrl-C ends the command cleanly
    if line is None:
        raise EOFError
    return line


def human_tools(ask: Callable[[str], str] | None = None) -> list[Tool]:
    """Build ``ask_human``; ``ask`` replaces the terminal (a GUI, a chat, a test script)."""
    asker = ask or ask_terminal

    def ask_human(question: str) -> str:
        """Ask the person at the terminal a question and return their answer.

        Args:
            question: One clear question for the person, e.g. "Which branch should I test?".
        """
        question = question.strip()
        if not question:
            raise ToolError("ask_human needs a question")
        try:
            answer = asker(question)
        except (EOFError, OSError, ValueError):  # ValueError: I/O on a closed stdin
            raise ToolError(NO_PERSON) from None
        answer = answer.strip()
        return answer if answer else "(the person gave an empty answer)"

    return [make_tool(ask_human, trusted_output=True)]
