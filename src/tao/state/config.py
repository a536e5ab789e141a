"""What a run carries between steps, typed: its settings, its checkpoint, its waiting calls.

These cross module boundaries (agent, loop, run log, CLI, web page), so each is a
frozen dataclass with a docstring per field; JSON appears only at the run log's
edge, through ``to_json``/``from_json`` (both :mod:`tao.state.codec`, which the
``codec.shape`` calls below tune). A record written by an older tao is upgraded on the
way in (:mod:`tao.state.migrations`), never misread.

Checkpoint fields added later (``approvals``, ``refused_calls``, ``compactions``,
``window``) are left out while empty, so older records read back unchanged.

    config = RunConfig(model="local", tools=("calc",), max_steps=5)
    agent = Agent(config=config)
"""

from __future__ import annotations

import dataclasses
import getpass
import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Self, TypeVar

from tao.errors import StateError
from tao.models.base import Message, ModelReply, ToolCall
from tao.state import codec, migrations
from tao.state.compaction import Compaction
from tao.state.frozen import frozen
from tao.state.jsontypes import JSON, JSONObject, canonical_json

if TYPE_CHECKING:
    from tao.state.budget import Budget

T = TypeVar("T")
Protocol = Literal["auto", "text", "native"]
#: A person's decision on a waiting call: run it, refuse it, or refuse it with a reason.
Decision = bool | str
#: Where a decision was taken: ``tao run``'s prompt or ``tao runs approve|deny`` (cli), the
#: web page's form (web), its JSON endpoint (api), a policy rule (policy), Python code (python).
Via = Literal["cli", "web", "api", "policy", "python"]

CHECKPOINT_VERSION = migrations.CHECKPOINT_VERSION
#: Children that ``RunConfig.network`` may let reach the network.
NETWORK_KINDS = ("tests", "mcp")
#: The built-in compaction policies (tao.run.compaction); ``module:attribute`` names another.
COMPACTIONS = ("elide", "summarize", "none")
#: A variable name ``pass_env`` accepts (the sandbox's own rule, repeated to keep this light).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalTag:
    """Which benchmark question a run answers: ``tao eval`` records it with each run, so
    the run log and the web page tell an eval's runs apart and show the expected answer."""

    benchmark: str
    """``hotpotqa`` or ``fever``."""
    question_id: str
    """The question's id in the benchmark file."""
    gold: str
    """The benchmark's answer (the run is scored against it)."""
    strategy: str | None = None
    """The prompting strategy (``react``, ``cot-sc``…)."""

    def to_json(self) -> JSONObject:
        return codec.encode(self)

    @classmethod
    def from_json(cls, data: JSON) -> EvalTag:
        """Read a stored tag; a wrong shape is a :class:`StateError`."""
        return _stored(cls, data, "stored config", "eval_tag")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """Every setting of a run, in one place; the run log records it, resume and eval rebuild it.

    Only data lives here (JSON-able); live objects (a model instance, Python tools, an
    approver, a store) are given to :class:`tao.Agent` beside it.
    """

    model: str | None = "local"
    """The model spec (``local``, ``openai:MODEL``…); ``None`` when a model object was given."""
    fallback_models: tuple[str, ...] = ()
    """Model specs that take a request the model could not answer (no connection, a
    timeout, 429/5xx after retries, an unknown model), in order (``--fallback-model``)."""
    tools: tuple[str | None, ...] = ()
    """Tool set names (``calc``, ``files``…); ``None`` marks a Python tool, not rebuildable."""
    lang: str = "en"
    """Label language of the text protocol (SPEC L8): en, tr, ar, ja, sv."""
    max_steps: int = 8
    """Model replies at most (SPEC L5); parallel calls of one reply are one step."""
    max_seconds: float = 300.0
    """Wall-clock limit of the run (SPEC L5)."""
    max_tokens: int = 100_000
    """Input plus output tokens over the run (SPEC L5)."""
    max_cost_usd: float | None = None
    """Money limit of the run in US dollars (``--max-cost``); ``None``: no limit. Needs a
    model whose price is known (:mod:`tao.models.pricing`), or the run is refused at its start."""
    max_reply_tokens: int = 512
    """The longest one model reply may be."""
    max_repeats: int = 2
    """Identical calls allowed in a run before it ends (SPEC L12)."""
    max_calls_per_reply: int = 16
    """Tool calls of one model reply that run (native parallel calls); the rest are refused
    as one observation, so a reply of thousands of calls costs no more than a few (S4, L4)."""
    protocol: Protocol = "auto"
    """``text`` (Thought/Action labels), ``native`` (tool calling), or ``auto`` by backend."""
    temperature: float = 0.0
    """Sampling temperature of every model call."""
    grammar: bool = True
    """Constrain decoding with a GBNF grammar where the backend can (the embedded model)."""
    project: str | None = None
    """The folder file and test tools are confined to (an absolute path)."""
    corpus: str | None = None
    """The local Wikipedia JSONL for the wiki tools (an absolute path)."""
    base_url: str | None = None
    """An OpenAI-compatible server's URL, for ``openai:`` specs."""
    system_prompt: str | None = None
    """Replaces the built-in system prompt (the paper's benchmarks use this)."""
    numbered: bool = False
    """The paper's numbered labels (``Thought 3:``, ``Observation 3:``)."""
    task_label: str | None = None
    """How the task is introduced (``Question``, ``Claim``); default: the language's."""
    fence_untrusted: bool = True
    """Fence tool output read from the world as untrusted data (SPEC S4)."""
    output_schema: JSONObject | None = None
    """The JSON Schema a final answer must match (SPEC L13); ``None``: any text."""
    eval_tag: EvalTag | None = None
    """The benchmark question an eval's run answers; ``None`` outside ``tao eval``."""
    pass_env: tuple[str, ...] = ()
    """Names of environment variables sandboxed children also get (``--pass-env NAME``,
    SPEC S10). Names only: values are read from the environment when a child starts,
    so none is ever written to the run log."""
    network: tuple[str, ...] = ()
    """Which children may use the network (``--allow-net tests|mcp``); default: none."""
    context_window: int | None = None
    """Tokens the model's context holds (``--context-window``); ``None``: the backend's own
    (the embedded model's ``n_ctx``, the table of known API models), else learned from the
    first request the provider refuses for size (docs/long-runs.md)."""
    compaction: str = "elide"
    """What the model is shown of older steps once the transcript nears the window
    (``--compaction``): ``elide`` (stubs that the ``recall`` tool brings back), ``summarize``
    (a recorded model call), ``none``, or ``module:attribute`` naming your own policy."""
    queue: str | None = None
    """The queue of workers a submitted run goes to (``tao submit --queue``, issue 28): a
    run paused for approval goes back to it once decided. ``None``: the process that starts
    the run runs it."""

    def __post_init__(self) -> None:
        self.budget()  # refuses limits that make no sense, with the budget's own words
        if self.max_repeats < 0:
            raise ValueError("max_repeats must be 0 or more")
        if self.max_calls_per_reply < 1:
            raise ValueError("max_calls_per_reply must be 1 or more")
        if self.protocol not in ("auto", "text", "native"):
            raise ValueError(f"protocol must be auto, text or native, not {self.protocol!r}")
        if any(kind not in NETWORK_KINDS for kind in self.network):
            raise ValueError(f"network takes {' and '.join(NETWORK_KINDS)}, not {self.network!r}")
        if any(not ENV_NAME.fullmatch(name) for name in self.pass_env):
            raise ValueError(f"pass_env takes variable names, not {self.pass_env!r}")
        if self.context_window is not None and self.context_window < 256:
            raise ValueError(
                f"context_window must be 256 tokens or more, not {self.context_window}"
            )
        if self.compaction not in COMPACTIONS and ":" not in self.compaction:
            raise ValueError(
                f"compaction takes {', '.join(COMPACTIONS)} or module:attribute, "
                f"not {self.compaction!r}"
            )

    def budget(self) -> Budget:
        """The limits of the run (SPEC L5), money included when set."""
        # Imported here: the budget module holds Usage, which reads and writes itself
        # through the codec, and a settings record need not stand on that to be read.
        from tao.state.budget import Budget

        return Budget(self.max_steps, self.max_seconds, self.max_tokens, self.max_cost_usd)

    def replace(self, **changes: object) -> RunConfig:
        """A copy with some settings changed (``config.replace(max_steps=5)``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def to_json(self) -> JSONObject:
        return codec.encode(self)

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> RunConfig:
        """Rebuild from the run log; unknown keys (a newer tao's) are ignored, bad types refused."""
        return _stored(cls, dict(data), "stored config")


def call_digest(tool: str, arguments: JSONObject) -> str:
    """sha256 of the tool and its canonical arguments: what an approval is bound to (S7)."""
    text = canonical_json({"tool": tool, "arguments": arguments})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@frozen(kw_only=True)
class PendingCall:
    """A call with side effects that waits for a person's decision (SPEC S3, S7).

    Its ``digest`` and ``id`` follow from what the call is (no clock, no randomness),
    so the loop can name a call without making ids, and a stored call reads back the same.
    """

    step: int
    """The step whose reply asked for the call."""
    position: int
    """Its place among the parallel calls of that reply (0 for the text protocol)."""
    tool: str
    arguments: JSONObject
    effects: tuple[str, ...] = ()
    """What the tool does to the world (writes, deletes, sends…)."""
    preview: str | None = None
    """What a person should see before deciding: a diff, the file to delete."""
    interrupted: bool = False
    """It was running when its process stopped (SPEC R1): it may have taken effect. Only a
    person decides whether it runs again; no policy rule or automatic approver does."""
    reason: str | None = None
    """Why a call of a tool with no declared effect waits for a person (SPEC S11): the
    project code ``run_tests`` would execute changed since the last approval, and which files."""
    thought: str | None = None
    """The model's Thought in the reply that asked for the call: why it wants it, shown to
    the person before they decide (a log written before it existed has none)."""
    digest: str = field(init=False)
    """:func:`call_digest` of ``tool`` and ``arguments``: what a decision is bound to."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "digest", call_digest(self.tool, self.arguments))

    @property
    def warning(self) -> str | None:
        """What a person must know before deciding beyond the call itself, if anything."""
        if not self.interrupted:
            return self.reason
        warning = (
            "it was running when the process stopped; it may have taken effect. Approve to "
            "run it again, or deny to go on without running it again"
        )
        return warning if self.reason is None else f"{warning}. {self.reason}"

    @property
    def id(self) -> str:
        """Names this call in ``tao runs approve --call`` and the web page's forms."""
        return f"s{self.step}c{self.position}-{self.digest[:12]}"

    def to_json(self) -> JSONObject:
        return codec.encode(self)

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> PendingCall:
        """Read a stored call; a wrong shape is a :class:`StateError`."""
        return _stored(cls, dict(data), "stored call")


@dataclass(frozen=True, slots=True, kw_only=True)
class Approval:
    """The record of one decision on a call (issue 30): who, when, from where, and why.

    The :data:`Decision` alone drives the run; this says who is accountable for it. It is
    kept in the checkpoint while the run waits, then on the step that ran (or refused) the
    call, so ``tao runs show``, ``tao runs export`` and the web page show it for good.
    """

    approved: bool
    by: str
    """The OS user name (CLI, web page), the token's label (API), or the policy file."""
    via: Via
    at: float
    """Unix time of the decision."""
    reason: str | None = None
    """The person's reason (a denial's is told to the model), or the rule that allowed it."""

    @classmethod
    def taken(cls, decision: Decision, via: Via, by: str | None = None) -> Approval:
        """The record of ``decision`` taken now, by ``by`` (default: this OS user)."""
        reason = decision if isinstance(decision, str) else None
        return cls(approved=decision is True, by=by or user_name(), via=via, at=time.time(),
                   reason=reason)  # fmt: skip

    @property
    def decision(self) -> Decision:
        """What the loop acts on: ``True``, or ``False``/the reason for a denial."""
        return True if self.approved else (self.reason or False)

    def to_json(self) -> JSONObject:
        return codec.encode(self)

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> Approval:
        via, at, reason = data.get("via"), data.get("at"), data.get("reason")
        return cls(
            approved=data.get("approved") is True,
            by=str(data.get("by") or "unknown"),
            via=via if via in VIAS else "python",
            at=float(at) if isinstance(at, int | float) else 0.0,
            reason=reason if isinstance(reason, str) else None,
        )

    def describe(self) -> str:
        """One line for people: ``approved by alice via cli at 2026-12-04 22:10:05 UTC``."""
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.at))
        verb = "approved" if self.approved else "denied"
        why = f": {self.reason}" if self.reason else ""
        return f"{verb} by {self.by} via {self.via} at {when}{why}"


VIAS: tuple[Via, ...] = ("cli", "web", "api", "policy", "python")


def user_name() -> str:
    """Who runs this process, as the OS names them (``unknown`` where it cannot say)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):
        return "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class Completed:
    """The journal's second half (SPEC R1): a call with side effects ran and returned this.

    Recorded right after the effect, before its step is stored, so a crash in between
    neither runs the call again nor asks the person again: resume takes this outcome.
    """

    observation: str
    """What the call returned, redacted and cut as the model is shown it."""
    duration_s: float = 0.0
    source: str | None = None
    """The tool whose output this is, when that output is untrusted data (SPEC S4)."""

    def to_json(self) -> JSONObject:
        return codec.encode(self)


@frozen(kw_only=True)
class Checkpoint:
    """Where a run stands, enough to continue it in another process (SPEC S3, M3).

    Written after every step, when a call waits for a person, and around calls with
    side effects (the journal of SPEC R1): before they run (``executing``) and right after
    (``completed``). Steps with only read-only calls write nothing extra.
    """

    schema_version: int = CHECKPOINT_VERSION
    """Bumped when the shape changes; :meth:`from_json` migrates older ones."""
    messages: tuple[Message, ...] = ()
    """The transcript so far (messages are never edited once appended)."""
    elapsed_s: float = 0.0
    """Run time spent before this checkpoint, so a resumed run keeps its time budget."""
    step: int | None = None
    """The step whose reply is being acted on; ``None`` between steps."""
    reply: ModelReply | None = None
    """That step's reply, acted on again on resume instead of asking the model anew."""
    pending: tuple[PendingCall, ...] = ()
    """Calls waiting for a person's decision."""
    decisions: Mapping[str, Decision] = field(default_factory=dict)
    """Decisions taken so far, by :attr:`PendingCall.id`."""
    executing: bool = False
    """The approved calls with side effects of ``step`` had started (the journal's first
    half): on resume, one without a ``completed`` record may have taken effect, and goes
    back to a person instead of running again."""
    completed: Mapping[str, Completed] = field(default_factory=dict)
    """What those calls returned, by :attr:`PendingCall.id`, recorded right after each ran."""
    approved: Mapping[str, JSON] = field(default_factory=dict)
    """By tool name, the state a person last approved for tools with a gate (SPEC S11): the
    fingerprint of the project's code ``run_tests`` may execute unasked. Taken when the run
    starts and at each approved call; a run recorded without it asks before each such call."""
    approvals: Mapping[str, Approval] = field(default_factory=dict)
    """Who took each of ``decisions``, when and from where, by :attr:`PendingCall.id`."""
    refused_calls: int = 0
    """Calls of ``reply`` refused for ``max_calls_per_reply``: ``reply`` keeps only the calls
    that run, so a resumed run refuses the same ones, and the record stays small."""
    compactions: tuple[Compaction, ...] = ()
    """What the model is shown instead of parts of ``messages`` (issue 27): recorded when
    decided, so a resumed run shows the model exactly what it was shown."""
    window: int | None = None
    """The context window the run keeps to, learned ones included."""

    @property
    def cut_short(self) -> tuple[str, ...]:
        """The calls with side effects the journal shows started and not completed, by id:
        if the run stopped here, each may have taken effect (SPEC R1)."""
        if not self.executing:
            return ()
        started = (key for key, decision in self.decisions.items() if decision is True)
        return tuple(key for key in started if key not in self.completed)

    def to_json(self) -> JSONObject:
        return codec.encode(self)

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> Self:
        """Read a stored checkpoint of any version; an unreadable one is a :class:`StateError`."""
        return _stored(cls, dict(data), "checkpoint")


def _stored(cls: type[T], data: JSON, said: str, what: str = "") -> T:
    """:func:`tao.state.codec.decode`, with a wrong shape as a :class:`StateError`."""
    try:
        return codec.decode(cls, data, what)
    except codec.NewerVersionError as error:
        raise StateError(f"{said} {error}; upgrade tao to resume it") from None
    except codec.ShapeError as error:
        raise StateError(f"{said} is not valid: {error}") from None


codec.shape(
    PendingCall,
    keys=("id", "digest", "step", "position", "tool", "arguments", "preview", "effects",
          "interrupted", "reason", "thought"),
    computed=("id",),
    omit_default=("reason", "thought"),
    null_is_default=True,
)  # fmt: skip
codec.shape(Completed, null_is_default=True)
codec.shape(
    ModelReply,
    keys=("text", "input_tokens", "output_tokens", "evaluated_tokens", "finish_reason",
          "cache_read_tokens", "cache_write_tokens", "cost_usd", "tool_calls"),
    null_is_default=True,
)  # fmt: skip
codec.shape(ToolCall, rename={"raw_arguments": "raw"}, null_is_default=True)
codec.shape(
    Checkpoint,
    null_is_default=True,
    version_key="schema_version",
    omit_default=("approvals", "refused_calls", "compactions", "window"),
    version=CHECKPOINT_VERSION,
    upgrades=migrations.CHECKPOINT,
)
