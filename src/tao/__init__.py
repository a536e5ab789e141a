"""tao: ReAct agents (Thought, Action, Observation) for serious use.

    from tao import Agent, tool

    result = Agent("local", ["calc"]).run("What is 17 * 23 + 4?")
    print(result.status, result.answer)

Heavy modules (provider SDKs, the embedded model) load only when used, so
``import tao`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tao.errors import (
    Cancelled,
    ConfigError,
    ControlSignal,
    FatalError,
    InternalError,
    MissingPackageError,
    ModelError,
    ModelFacingError,
    ModelSpecError,
    ModelUnavailableError,
    ModelUnreachableError,
    PluginError,
    ResumeError,
    RunBusyError,
    StateError,
    StoreError,
    TaoError,
    ToolDefinitionError,
    ToolError,
    UnknownRunError,
    UnknownSettingError,
    UnknownToolSetError,
)
from tao.events import (
    ActionEvent,
    AnswerEvent,
    ApprovalEvent,
    CompactionEvent,
    Event,
    FinalEvent,
    ObservationEvent,
    TextDelta,
)
from tao.state.budget import Usage
from tao.state.config import Checkpoint, PendingCall, RunConfig
from tao.state.result import RunResult, Status, Step, StepKind

if TYPE_CHECKING:
    from tao.agent import Agent
    from tao.tools.base import Tool, tool

__all__ = [
    "ActionEvent",
    "Agent",
    "AnswerEvent",
    "ApprovalEvent",
    "Cancelled",
    "Checkpoint",
    "CompactionEvent",
    "ConfigError",
    "ControlSignal",
    "Event",
    "FatalError",
    "FinalEvent",
    "InternalError",
    "MissingPackageError",
    "ModelError",
    "ModelFacingError",
    "ModelSpecError",
    "ModelUnavailableError",
    "ModelUnreachableError",
    "ObservationEvent",
    "PendingCall",
    "PluginError",
    "ResumeError",
    "RunBusyError",
    "RunConfig",
    "RunResult",
    "StateError",
    "Status",
    "Step",
    "StepKind",
    "StoreError",
    "TaoError",
    "TextDelta",
    "Tool",
    "ToolDefinitionError",
    "ToolError",
    "UnknownRunError",
    "UnknownSettingError",
    "UnknownToolSetError",
    "Usage",
    "tool",
]


def __getattr__(name: str) -> object:
    # Loaded on first use: tools need pydantic, which is most of what importing costs.
    if name == "Agent":
        from tao.agent import Agent

        return Agent
    if name in ("Tool", "tool"):
        from tao.tools import base

        return getattr(base, name)
    raise AttributeError(f"module 'tao' has no attribute {name!r}")
