"""A tool call in its three stages: asked for, ready to run, and what it came to.

These cross every layer (the protocol parses a :class:`Call`, the act validates it into a
:class:`Ready`, the loop records its :class:`Outcome`, telemetry and the journal read all
three), so they live with the run's other plain data, below the engine that makes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from tao.state.budget import ChildRun
from tao.state.config import PendingCall
from tao.state.frozen import frozen
from tao.state.jsontypes import JSONObject
from tao.state.status import StepKind

if TYPE_CHECKING:  # a Ready holds the Tool it found; this module never calls one
    from tao.tools.base import Tool


@frozen
class Call:
    """A tool call as the model asked for it, in either protocol."""

    tool: str
    argument: str
    form: Literal["bracket", "call", "native"]
    #: Already-structured arguments (native tool calling); ``None`` means bind ``argument``.
    arguments: JSONObject | None = None
    call_id: str | None = None


@frozen
class Ready:
    """A call whose tool exists and whose arguments passed validation."""

    call: Call
    tool: Tool
    arguments: JSONObject


@frozen
class Outcome:
    """What a call came to: the Observation and how the step that records it is filed."""

    kind: StepKind
    observation: str
    tool: str
    arguments: JSONObject | None
    duration_s: float = 0.0
    #: The tool whose output this is, when that output is untrusted data (SPEC S4).
    source: str | None = None
    #: The child run the call started, when its tool is an agent.
    child: ChildRun | None = None
    #: That child run paused for calls nobody could decide inline (issue 31): the parent
    #: pauses too, waiting on these (the child's own calls, as the parent's pending calls).
    waiting: tuple[PendingCall, ...] = ()
