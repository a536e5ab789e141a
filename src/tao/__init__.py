"""tao: ReAct agents (Thought, Action, Observation) for serious use.

    from tao import Agent, tool

    result = Agent(model="local", tools=["calc"]).run("What is 17 * 23 + 4?")
    print(result.status, result.answer)

Heavy modules (provider SDKs, the embedded model) load only when used, so
``import tao`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tao.errors import (
    ModelError,
    ModelSpecError,
    ModelUnavailableError,
    StoreError,
    TaoError,
    ToolDefinitionError,
    ToolError,
    UnknownToolSetError,
)
from tao.trace import RunResult, Status, Step, StepKind, Usage

if TYPE_CHECKING:
    from tao.agent import Agent
    from tao.tools.base import Tool, tool

__all__ = [
    "Agent",
    "ModelError",
    "ModelSpecError",
    "ModelUnavailableError",
    "RunResult",
    "Status",
    "Step",
    "StepKind",
    "StoreError",
    "TaoError",
    "Tool",
    "ToolDefinitionError",
    "ToolError",
    "UnknownToolSetError",
    "Usage",
    "tool",
]


def __getattr__(name: str) -> Any:
    # Loaded on first use: tools need pydantic, which is most of what importing costs.
    if name == "Agent":
        from tao.agent import Agent

        return Agent
    if name in ("Tool", "tool"):
        from tao.tools import base

        return getattr(base, name)
    raise AttributeError(f"module 'tao' has no attribute {name!r}")
