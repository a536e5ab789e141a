"""Turning a parsed Action into an Observation (SPEC L4, L6).

Every way a tool call can go wrong ends here as text the model can react to:
an unknown tool, arguments that do not fit, a refusal, a crash. Nothing
raised by a tool escapes, and every observation is cut to its tool's size.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tao.errors import ToolError
from tao.protocol.text import Action
from tao.tools.base import Tool, cut
from tao.trace import StepKind

#: Runs one validated call; the default calls the tool, ``--human-tools`` asks a person.
Executor = Callable[[Tool, dict[str, Any]], str]


def call_tool(tool: Tool, arguments: dict[str, Any]) -> str:
    """The default executor: validate and run the Python function."""
    return tool.invoke(arguments)


@dataclass(frozen=True)
class Outcome:
    kind: StepKind
    observation: str
    tool: str
    arguments: dict[str, Any] | None
    duration_s: float


def find_tool(name: str, tools: Mapping[str, Tool]) -> Tool | None:
    """Exact name first, then case-insensitively (the paper's prompts write ``Search[...]``)."""
    if name in tools:
        return tools[name]
    folded = {key.lower(): tool for key, tool in tools.items()}
    return folded.get(name.lower())


def act(action: Action, tools: Mapping[str, Tool], execute: Executor = call_tool) -> Outcome:
    """Run ``action`` against ``tools`` and describe the result; never raises (except Ctrl-C)."""
    started = time.perf_counter()
    tool = find_tool(action.tool, tools)
    if tool is None:
        available = ", ".join(tools)
        observation = f"Unknown tool: {action.tool}. Available: {available}"
        return Outcome(StepKind.UNKNOWN_TOOL, observation, action.tool, None, 0.0)
    arguments: dict[str, Any] | None = None
    try:
        arguments = tool.validate(tool.bind(action.argument, action.form))
        observation = execute(tool, arguments)
    except ToolError as error:
        observation = f"Error: {error}"
    except Exception as error:  # a crashing tool is an observation, not a crashed run
        observation = f"Error: {type(error).__name__}: {error}"
    observation = cut(observation, tool.max_chars, tool.keep)
    return Outcome(
        StepKind.ACTION, observation, tool.name, arguments, time.perf_counter() - started
    )
