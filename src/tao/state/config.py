"""What a run carries between steps, typed: its settings, its checkpoint, its waiting calls.

These cross module boundaries (agent, loop, run log, CLI, web page), so each is a
frozen dataclass with a docstring per field; JSON appears only at the run log's
edge, through ``to_json``/``from_json``. A record written by an older tao is
migrated on the way in (``Checkpoint.from_json``), never misread.

Checkpoint versions: 0 (tao 0.1: decisions by position), 1 (ids, ``executing``), 2 (the
journal's second half, ``completed``, and ``PendingCall.interrupted``; a v1 checkpoint
has no completion records, so a v1 turn that was ``executing`` puts every approved call
with side effects back to a person, SPEC R1).

    config = RunConfig(model="local", tools=("calc",), max_steps=5)
    agent = Agent(config=config)
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Self, TypedDict, cast, get_args

from tao.errors import StateError
from tao.models.base import Message, ModelReply, ToolCall
from tao.paths import TRUST_PROJECT_POLICY_ENV
from tao.protocol.labels import LABELS
from tao.state.budget import Budget
from tao.state.frozen import frozen
from tao.state.jsontypes import JSON, JSONObject, canonical_json
from tao.state.setting import Setting, Variant, refuse_bad, setting, unrecorded

Protocol = Literal["auto", "text", "native"]
#: A person's decision on a waiting call: run it, refuse it, or refuse it with a reason.
Decision = bool | str

CHECKPOINT_VERSION = 2
#: Children that ``RunConfig.network`` may let reach the network.
NETWORK_KINDS = ("tests", "mcp")
#: A variable name ``pass_env`` accepts (the sandbox's own rule, repeated to keep this light).
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
#: A setting ``tao eval`` shows exactly as ``tao run`` does.
SAME = Variant()


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
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, data: JSON) -> EvalTag:
        """Read a stored tag; a wrong shape is a :class:`StateError`."""
        if not isinstance(data, dict):
            raise StateError(f"stored config: eval_tag must be an object, not {data!r}")
        values = {f.name: data.get(f.name) for f in dataclasses.fields(cls)}
        if not all(isinstance(values[n], str) for n in ("benchmark", "question_id", "gold")) or (
            not isinstance(values["strategy"], str | None)
        ):
            raise StateError(f"stored config: eval_tag has missing or mistyped fields: {data!r}")
        return cls(**values)  # type: ignore[arg-type]


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
    tools: tuple[str | None, ...] = setting(
        (),
        Setting(
            flag="--tools",
            short="-t",
            kind="list",
            repeatable=True,
            help="Tool sets, comma-separated: {tool_sets}.",
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

    def budget(self) -> Budget:
        """The limits of the run (SPEC L5), money included when set: its fields of those names."""
        return Budget(**{f.name: getattr(self, f.name) for f in dataclasses.fields(Budget)})

    def replace(self, **changes: object) -> RunConfig:
        """A copy with some settings changed (``config.replace(max_steps=5)``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def to_json(self) -> JSONObject:
        """What the run log records: every setting but those a person gives each time."""
        kept = (f.name for f in dataclasses.fields(self) if f.name not in unrecorded(self))
        data: JSONObject = {name: getattr(self, name) for name in kept}
        data["tools"] = list(self.tools)
        data["pass_env"], data["network"] = list(self.pass_env), list(self.network)
        data["eval_tag"] = self.eval_tag.to_json() if self.eval_tag is not None else None
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> RunConfig:
        """Rebuild from the run log; unknown keys (a newer tao's) are ignored, bad types
        refused, and a setting that is never recorded is not read back from one."""
        names = {f.name: f for f in dataclasses.fields(cls) if f.name not in unrecorded(cls)}
        values: dict[str, object] = {k: v for k, v in data.items() if k in names}
        tools = data.get("tools", [])
        if not isinstance(tools, list):
            raise StateError(f"stored config: tools must be a list, not {tools!r}")
        values["tools"] = tuple(t if isinstance(t, str) else None for t in tools)
        for name in ("pass_env", "network"):
            listed = data.get(name, [])
            if not isinstance(listed, list) or not all(isinstance(v, str) for v in listed):
                raise StateError(f"stored config: {name} must be a list of names, not {listed!r}")
            values[name] = tuple(listed)
        tag = data.get("eval_tag")
        values["eval_tag"] = None if tag is None else EvalTag.from_json(tag)
        try:
            return cls(**values)  # type: ignore[arg-type]
        except (TypeError, ValueError) as error:
            raise StateError(f"stored config is not valid: {error}") from None


class Settings(TypedDict, total=False):
    """RunConfig's settings as keywords of :class:`tao.Agent` (PEP 692), so a type checker
    checks ``Agent(..., max_steps=5)`` and a misspelled one fails at construction.

    Not a second declaration: the names and types are RunConfig's, which
    ``tests/test_settings.py`` checks (it prints the line to add for a new field); only
    ``model`` and ``tools`` are left out (the Agent's own first two arguments), paths may
    be given as :class:`os.PathLike` (stored absolute), and ``output_type`` is added.
    """

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
    trust_project_policy: bool | None
    queue: str | None
    output_type: object
    """What ``result.output`` is made as (a pydantic model, a dataclass, a JSON Schema);
    recorded as its JSON Schema in ``output_schema``."""


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
        data: JSONObject = {"id": self.id, "digest": self.digest}
        for name in ("step", "position", "tool", "arguments", "preview"):
            data[name] = getattr(self, name)
        data["effects"] = list(self.effects)
        data["interrupted"] = self.interrupted
        if self.reason is not None:
            data["reason"] = self.reason
        if self.thought is not None:
            data["thought"] = self.thought
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, JSON], step: int = 0) -> PendingCall:
        """Read a stored call (one written before ids existed gets them now)."""
        arguments = data.get("arguments")
        effects = data.get("effects") or []
        preview, reason, thought = data.get("preview"), data.get("reason"), data.get("thought")
        return cls(
            step=_int(data.get("step", step)),
            position=_int(data.get("position", 0)),
            tool=str(data.get("tool", "")),
            arguments=arguments if isinstance(arguments, dict) else {},
            effects=tuple(str(e) for e in effects) if isinstance(effects, list) else (),
            preview=preview if isinstance(preview, str) else None,
            interrupted=data.get("interrupted") is True,
            reason=reason if isinstance(reason, str) else None,
            thought=thought if isinstance(thought, str) else None,
        )


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
        return {"observation": self.observation, "duration_s": self.duration_s,
                "source": self.source}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> Completed:
        duration, source = data.get("duration_s"), data.get("source")
        return cls(
            observation=str(data["observation"]),
            duration_s=float(duration) if isinstance(duration, int | float) else 0.0,
            source=source if isinstance(source, str) else None,
        )


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
    refused_calls: int = 0
    """Calls of ``reply`` refused for ``max_calls_per_reply``: ``reply`` keeps only the calls
    that run, so a resumed run refuses the same ones, and the record stays small."""

    @property
    def cut_short(self) -> tuple[str, ...]:
        """The calls with side effects the journal shows started and not completed, by id:
        if the run stopped here, each may have taken effect (SPEC R1)."""
        if not self.executing:
            return ()
        started = (key for key, decision in self.decisions.items() if decision is True)
        return tuple(key for key in started if key not in self.completed)

    def to_json(self) -> JSONObject:
        data: JSONObject = {
            "schema_version": self.schema_version,
            "messages": [cast(JSON, dict(m)) for m in self.messages],
            "elapsed_s": self.elapsed_s,
            "step": self.step,
            "reply": _reply_json(self.reply) if self.reply is not None else None,
            "pending": [p.to_json() for p in self.pending],
            "decisions": dict(self.decisions),
            "executing": self.executing,
            "completed": {key: entry.to_json() for key, entry in self.completed.items()},
            "approved": dict(self.approved),
        }
        if self.refused_calls:  # written only when there are some: older records stay the same
            data["refused_calls"] = self.refused_calls
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> Self:
        """Read a stored checkpoint of any version; an unreadable one is a :class:`StateError`."""
        version = data.get("schema_version", 0)
        if not isinstance(version, int) or version > CHECKPOINT_VERSION:
            raise StateError(
                f"checkpoint schema version {version!r} is newer than this tao "
                f"({CHECKPOINT_VERSION}); upgrade tao to resume it"
            )
        try:
            return cls._read(data, version)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise StateError(f"checkpoint is not valid: {type(error).__name__}: {error}") from None

    @classmethod
    def _read(cls, data: Mapping[str, JSON], version: int) -> Self:
        step = data.get("step")
        step = int(step) if isinstance(step, int | float) else None
        pending = tuple(
            PendingCall.from_json(cast(Mapping[str, JSON], p), step or 0)
            for p in cast(list[JSON], data.get("pending") or [])
        )
        decisions = cast(
            dict[str, Decision], dict(cast(dict[str, JSON], data.get("decisions") or {}))
        )
        if version == 0:  # tao ≤ 0.1 keyed decisions by position and said "elapsed"
            by_position = {str(p.position): p.id for p in pending}
            decisions = {by_position.get(k, k): v for k, v in decisions.items()}
        elapsed = data.get("elapsed_s", data.get("elapsed", 0.0))
        reply = data.get("reply")
        completed = cast(dict[str, Mapping[str, JSON]], data.get("completed") or {})
        approved = data.get("approved")
        refused = data.get("refused_calls", 0)
        return cls(
            messages=tuple(cast(list[Message], data.get("messages") or [])),
            elapsed_s=float(elapsed) if isinstance(elapsed, int | float) else 0.0,
            step=step,
            reply=_reply_from(cast(Mapping[str, JSON], reply)) if isinstance(reply, dict) else None,
            pending=pending,
            decisions=decisions,
            executing=bool(data.get("executing", False)),
            completed={key: Completed.from_json(entry) for key, entry in completed.items()},
            approved=dict(approved) if isinstance(approved, dict) else {},
            refused_calls=_int(refused) if refused else 0,
        )


def _int(value: JSON) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected a number, got {value!r}")
    return int(value)


def _reply_json(reply: ModelReply) -> JSONObject:
    return {
        "text": reply.text,
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "evaluated_tokens": reply.evaluated_tokens,
        "finish_reason": reply.finish_reason,
        "cache_read_tokens": reply.cache_read_tokens,
        "cache_write_tokens": reply.cache_write_tokens,
        "cost_usd": reply.cost_usd,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "raw": c.raw_arguments}
            for c in reply.tool_calls
        ],
    }


def _reply_from(data: Mapping[str, JSON]) -> ModelReply:
    calls = cast(list[dict[str, JSON]], data.get("tool_calls") or [])
    evaluated = data.get("evaluated_tokens")
    finish = data.get("finish_reason")
    cost = data.get("cost_usd")
    return ModelReply(
        text=str(data["text"]),
        input_tokens=_int(data.get("input_tokens") or 0),
        output_tokens=_int(data.get("output_tokens") or 0),
        evaluated_tokens=_int(evaluated) if evaluated is not None else None,
        finish_reason=finish if isinstance(finish, str) else None,
        cache_read_tokens=_int(data.get("cache_read_tokens") or 0),
        cache_write_tokens=_int(data.get("cache_write_tokens") or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        tool_calls=tuple(
            ToolCall(
                str(c["id"]),
                str(c["name"]),
                cast(JSONObject, c.get("arguments") or {}),
                str(c.get("raw") or ""),
            )
            for c in calls
        ),
    )
