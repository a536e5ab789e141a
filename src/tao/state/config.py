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
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Self, TypedDict, TypeVar, get_args

from tao.errors import StateError
from tao.models.base import Message, ModelReply, ToolCall
from tao.paths import TRUST_PROJECT_POLICY_ENV
from tao.protocol.labels import LABELS
from tao.state import codec, migrations
from tao.state.compaction import Compaction
from tao.state.frozen import frozen
from tao.state.jsontypes import JSON, JSONObject, canonical_json
from tao.state.setting import Setting, Variant, refuse_bad, setting, settings_of, unrecorded

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
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
#: A setting ``tao eval`` shows exactly as ``tao run`` does.
SAME = Variant()
#: What ``compaction`` takes: a built-in policy, or ``module:attribute`` naming your own.
COMPACTION = rf"(?:{'|'.join(COMPACTIONS)}|[^:]+:.+)"


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

    Each field is the one declaration of its setting (:func:`~tao.state.setting.setting`):
    its default, range or choices, and command-line flag and help, from which RunConfig's
    checks, the options of ``tao run`` and ``tao eval`` and the :class:`Budget` are derived.
    Only data lives here (JSON-able); live objects (a model instance, Python tools, an
    approver, a store) are given to :class:`tao.Agent` beside it.
    """

    model: str | None = setting(
        "local",
        Setting(flag="--model", short="-m", envvar="TAO_MODEL", help="{model_forms}", eval=SAME),
    )
    """The model spec (``local``, ``openai:MODEL``…); ``None`` when a model object was given."""
    fallback_models: tuple[str, ...] = setting(
        (),
        Setting(
            flag="--fallback-model",
            repeatable=True,
            metavar="SPEC",
            help="A model that takes a request the model could not answer (no connection, a "
            "timeout, 429/5xx after retries, an unknown model); repeat for more, tried in "
            "order. Each reaches its provider as its environment says.",
        ),
    )
    """Model specs that take a request the model could not answer (no connection, a
    timeout, 429/5xx after retries, an unknown model), in order (``--fallback-model``)."""
    tools: tuple[str | None, ...] = setting(
        (),
        Setting(
            flag="--tools",
            short="-t",
            kind="list",
            repeatable=True,
            help="Tool sets, comma-separated: {tool_sets}, or a plugin's (tao plugins).",
        ),
    )
    """Tool set names (``calc``, ``files``…); ``None`` marks a Python tool, not rebuildable."""
    lang: str = setting(
        "en",
        Setting(
            flag="--lang",
            choices=tuple(sorted(LABELS)),
            help="Label language of the text protocol.",
        ),
    )
    """Label language of the text protocol (SPEC L8): en, tr, ar, ja, sv."""
    max_steps: int = setting(
        8,
        Setting(
            flag="--max-steps",
            minimum=1,
            help="Model replies at most.",
            eval=Variant(help="Default: 7 HotpotQA, 5 FEVER.", no_default=True),
        ),
    )
    """Model replies at most (SPEC L5); parallel calls of one reply are one step."""
    max_seconds: float = setting(
        300.0,
        Setting(
            flag="--max-seconds",
            above=0,
            help="Wall-clock limit.",
            eval=Variant(help="Wall-clock limit of each agent run.", minimum=1),
        ),
    )
    """Wall-clock limit of the run (SPEC L5)."""
    max_tokens: int = setting(
        100_000, Setting(flag="--max-tokens", minimum=1, help="Total token limit of the run.")
    )
    """Input plus output tokens over the run (SPEC L5)."""
    max_cost_usd: float | None = setting(
        None,
        Setting(
            flag="--max-cost",
            above=0,
            metavar="USD",
            help="Money limit of the run in US dollars; needs a model with a known price.",
        ),
    )
    """Money limit of the run in US dollars (``--max-cost``); ``None``: no limit. Needs a
    model whose price is known (:mod:`tao.models.pricing`), or the run is refused at its start."""
    max_reply_tokens: int = setting(
        512,
        Setting(
            flag="--max-reply-tokens",
            minimum=1,
            help="Tokens per model reply.",
            run=False,
            eval=Variant(minimum=16),
        ),
    )
    """The longest one model reply may be."""
    max_repeats: int = setting(
        2,
        Setting(
            flag="--max-repeats", minimum=0, help="Identical calls allowed before the run ends."
        ),
    )
    """Identical calls allowed in a run before it ends (SPEC L12)."""
    max_calls_per_reply: int = setting(
        16,
        Setting(
            flag="--max-calls-per-reply",
            minimum=1,
            help="Tool calls of one model reply that run; the rest are refused in one observation.",
        ),
    )
    """Tool calls of one model reply that run (native parallel calls); the rest are refused
    as one observation, so a reply of thousands of calls costs no more than a few (S4, L4)."""
    protocol: Protocol = setting(
        "auto",
        Setting(
            flag="--protocol",
            choices=get_args(Protocol),
            help="native tool calling where the backend has it, else text.",
        ),
    )
    """``text`` (Thought/Action labels), ``native`` (tool calling), or ``auto`` by backend."""
    temperature: float = setting(0.0, Setting(flag="--temperature", help="Sampling temperature."))
    """Sampling temperature of every model call."""
    grammar: bool = setting(
        True,
        Setting(
            flag="--no-grammar",
            help="Do not constrain local decoding to the format.",
            eval=Variant(help="Do not constrain ReAct decoding."),
        ),
    )
    """Constrain decoding with a GBNF grammar where the backend can (the embedded model)."""
    project: str | None = setting(
        None,
        Setting(
            flag="--project",
            kind="folder",
            command_default=".",
            help="Folder the file, write and test tools are confined to.",
        ),
    )
    """The folder file and test tools are confined to (an absolute path)."""
    corpus: str | None = setting(
        None,
        Setting(
            flag="--corpus",
            kind="file",
            help="JSONL corpus (title, text) for the wiki tools.",
            eval=Variant(help="Wiki corpus JSONL for search/lookup; default: the data folder's."),
        ),
    )
    """The local Wikipedia JSONL for the wiki tools (an absolute path)."""
    base_url: str | None = setting(
        None,
        Setting(
            flag="--base-url",
            envvar="OPENAI_BASE_URL",
            help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1",
            eval=SAME,
        ),
    )
    """An OpenAI-compatible server's URL, for ``openai:`` specs."""
    system_prompt: str | None = setting(None)
    """Replaces the built-in system prompt (the paper's benchmarks use this)."""
    numbered: bool = setting(False)
    """The paper's numbered labels (``Thought 3:``, ``Observation 3:``)."""
    task_label: str | None = setting(None)
    """How the task is introduced (``Question``, ``Claim``); default: the language's."""
    fence_untrusted: bool = setting(True)
    """Fence tool output read from the world as untrusted data (SPEC S4)."""
    output_schema: JSONObject | None = setting(
        None,
        Setting(
            flag="--output-schema",
            kind="schema",
            help="JSON Schema file the final answer must match (printed as JSON).",
        ),
    )
    """The JSON Schema a final answer must match (SPEC L13); ``None``: any text."""
    eval_tag: EvalTag | None = setting(None)
    """The benchmark question an eval's run answers; ``None`` outside ``tao eval``."""
    pass_env: tuple[str, ...] = setting(
        (),
        Setting(
            flag="--pass-env",
            repeatable=True,
            metavar="NAME",
            pattern=ENV_NAME,
            pattern_says="a variable name (give NAME, not NAME=value)",
            help="Also give sandboxed children (pytest, MCP servers) this environment "
            "variable of yours; repeatable. Only the name is recorded.",
        ),
    )
    """Names of environment variables sandboxed children also get (``--pass-env NAME``,
    SPEC S10). Names only: values are read from the environment when a child starts,
    so none is ever written to the run log."""
    network: tuple[str, ...] = setting(
        (),
        Setting(
            flag="--allow-net",
            repeatable=True,
            choices=NETWORK_KINDS,
            help="Let these sandboxed children use the network (default: none); repeatable.",
        ),
    )
    """Which children may use the network (``--allow-net tests|mcp``); default: none."""
    context_window: int | None = setting(
        None,
        Setting(
            flag="--context-window",
            minimum=256,
            metavar="TOKENS",
            help="Tokens the model's context holds [default: the backend's, else learned "
            "from its first refusal for size].",
            eval=Variant(
                help="Tokens the model's context holds (default: the backend's, else learned)."
            ),
        ),
    )
    """Tokens the model's context holds (``--context-window``); ``None``: the backend's own
    (the embedded model's ``n_ctx``, the table of known API models), else learned from the
    first request the provider refuses for size (docs/long-runs.md)."""
    compaction: str = setting(
        "elide",
        Setting(
            flag="--compaction",
            pattern=COMPACTION,
            pattern_says=f"a policy: give {', '.join(COMPACTIONS)}, or module:attribute",
            help="What the model is shown of older steps near the window: elide, summarize, "
            "none, or module:attribute (docs/long-runs.md).",
            eval=Variant(
                help="What the model is shown of older steps near the window: elide, "
                "summarize, none, or module:attribute."
            ),
        ),
    )
    """What the model is shown of older steps once the transcript nears the window
    (``--compaction``): ``elide`` (stubs that the ``recall`` tool brings back), ``summarize``
    (a recorded model call), ``none``, or ``module:attribute`` naming your own policy."""
    trust_project_policy: bool | None = setting(
        None,
        Setting(
            flag="--trust-project-policy",
            envvar=TRUST_PROJECT_POLICY_ENV,
            help="Accept a policy file inside the project (you wrote it yourself).",
            recorded=False,
            resume=True,
        ),
    )
    """Accept a policy file that lies inside the project (SPEC S3): a repository must not
    pre-approve its own calls, so only a person says it wrote the file. ``None``: as
    ``$TAO_TRUST_PROJECT_POLICY`` says. Never recorded: a resume or a follow-up is given it
    again, since the file may have changed (by an approved write) since the person said so."""
    queue: str | None = setting(None)
    """The queue of workers a submitted run goes to (``tao submit --queue``, issue 28): a
    run paused for approval goes back to it once decided. ``None``: the process that starts
    the run runs it."""

    def __post_init__(self) -> None:
        refuse_bad(self)  # each setting's range, choices or pattern, in its spec's words

    def replace(self, **changes: object) -> RunConfig:
        """A copy with some settings changed (``config.replace(max_steps=5)``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def to_json(self) -> JSONObject:
        """What the run log records: every setting but those a person gives each time."""
        return codec.encode(self)

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> RunConfig:
        """Rebuild from the run log; unknown keys (a newer tao's) are ignored, bad types
        refused, and a setting that is never recorded is not read back from one."""
        never = unrecorded(cls)
        return _stored(cls, {k: v for k, v in data.items() if k not in never}, "stored config")


#: A setting that is never recorded is no key of the stored config (see Setting.recorded).
codec.shape(
    RunConfig,
    keys=tuple(f.name for f, _ in settings_of(RunConfig) if f.name not in unrecorded(RunConfig)),
)


class Settings(TypedDict, total=False):
    """RunConfig's settings as keywords of :class:`tao.Agent` (PEP 692), so a type checker
    checks ``Agent(..., max_steps=5)`` and a misspelled one fails at construction.

    Not a second declaration: the names and types are RunConfig's, which
    ``tests/test_settings.py`` checks (it prints the line to add for a new field); only
    ``model`` and ``tools`` are left out (the Agent's own first two arguments), paths may
    be given as :class:`os.PathLike` (stored absolute), and ``output_type`` is added.
    """

    fallback_models: tuple[str, ...]
    lang: str
    max_steps: int
    max_seconds: float
    max_tokens: int
    max_cost_usd: float | None
    max_reply_tokens: int
    max_repeats: int
    max_calls_per_reply: int
    protocol: Protocol
    temperature: float
    grammar: bool
    project: str | os.PathLike[str] | None
    corpus: str | os.PathLike[str] | None
    base_url: str | None
    system_prompt: str | None
    numbered: bool
    task_label: str | None
    fence_untrusted: bool
    output_schema: JSONObject | None
    eval_tag: EvalTag | None
    pass_env: tuple[str, ...]
    network: tuple[str, ...]
    context_window: int | None
    compaction: str
    trust_project_policy: bool | None
    queue: str | None
    output_type: object
    """What ``result.output`` is made as (a pydantic model, a dataclass, a JSON Schema);
    recorded as its JSON Schema in ``output_schema``."""


def call_digest(tool: str, arguments: JSONObject) -> str:
    """sha256 of the tool and its canonical arguments: what an approval is bound to (S7)."""
    text = canonical_json({"tool": tool, "arguments": arguments})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@frozen
class ChildCall:
    """Where a pending call really waits: in a child run (``Agent.as_tool``, issue 31).

    A child run that needs a person and has nobody to ask pauses its parent; the parent's
    pending call is then the child's own call (same tool, arguments and digest, so a
    decision stays bound to exactly that call, SPEC S7), and this says which child run
    holds it and which of the parent's tools started that run."""

    run_id: str
    """The child run, paused with the call among its own pending calls."""
    tool: str
    """The parent's tool whose call started the child (the agent used as a tool)."""
    call: str
    """The call's :attr:`PendingCall.id` in the child run, where the decision is taken to."""


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
    """Why a call waits for a person beyond its effects: the project code ``run_tests``
    would execute changed since the last approval, and which files (SPEC S11); an MCP tool
    its server calls read-only and the person's policy does not (S3)."""
    thought: str | None = None
    """The model's Thought in the reply that asked for the call: why it wants it, shown to
    the person before they decide (a log written before it existed has none)."""
    child: ChildCall | None = None
    """Set when the call waits in a child run that paused this one (``step`` and
    ``position`` are then the parent's call that started the child)."""
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
    def origin(self) -> str | None:
        """Where the call waits, when a child run holds it (``None``: in this run)."""
        if self.child is None:
            return None
        return (
            f"in child run {self.child.run_id}, started by this run's "
            f"{self.child.tool} call at step {self.step}"
        )

    @property
    def id(self) -> str:
        """Names this call in ``tao runs approve --call`` and the web page's forms (a
        child's call: the parent's call that started the child, then the child's id)."""
        if self.child is not None:
            return f"s{self.step}c{self.position}-{self.child.call}"
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
          "interrupted", "reason", "thought", "child"),
    computed=("id",),
    omit_default=("reason", "thought", "child"),
    null_is_default=True,
)  # fmt: skip
codec.shape(ChildCall)
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
