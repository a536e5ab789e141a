"""From a :class:`~tao.state.config.RunConfig` to a run: build what the loop needs, start, reopen.

The agent (:mod:`tao.agent`) is the public face; the decisions behind it live
here, so that ``tao resume`` and ``tao eval`` rebuild an agent from a recorded
config through the very same code:

- :func:`build_setup`: load the model, resolve the tools, pick the protocol,
  the grammar and the system prompt;
- :func:`begin` and :func:`reopen`: a fresh run, or one continued from its
  checkpoint (refused with a :class:`~tao.errors.ResumeError` when it ended).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import secrets
import sys
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tao.errors import ConfigError, ResumeError, StateError, UnknownSettingError
from tao.models import Message, Model, load_model
from tao.models.fallback import with_fallbacks
from tao.models.modelinfo import reported_window
from tao.models.pricing import cost_known
from tao.models.window import counter_of, estimate, window_of
from tao.protocol import prompts
from tao.protocol.labels import get_labels
from tao.redact.known import remember, remember_environment
from tao.run.exchange import LoopSetup
from tao.run.output import OutputSpec, schema_of
from tao.run.policies import policy_named
from tao.state.budget import Usage
from tao.state.config import COMPACTIONS, Approval, Checkpoint, Decision, RunConfig
from tao.state.result import RunResult, Status
from tao.state.setting import path_settings
from tao.tools.base import Tool, make_tool

if TYPE_CHECKING:
    from tao.approval.policy import Policy
    from tao.store import RunSummary, Store
    from tao.store.heartbeat import RunLease

#: Settings that name a folder or file: stored absolute, so a resume elsewhere finds them.
_PATH_SETTINGS = path_settings(RunConfig)
#: What ``Agent(**settings)`` takes: RunConfig's fields but the Agent's own first two
#: arguments, and ``output_type`` (recorded as ``output_schema``).
KEYWORDS = frozenset(f.name for f in dataclasses.fields(RunConfig)) - {"model", "tools"} | {
    "output_type"
}


def finish(answer: str) -> str:
    """Finish the task with your answer."""
    return answer


def recall(step: int) -> str:
    """Show again the full observation of an earlier step that was compacted."""
    # The loop answers recall from the run's own record (tao.run.compaction.recalled);
    # this body runs only if a caller invokes the tool outside a run.
    return f"Error: recall[{step}] works only inside a run"


def new_run_id() -> str:
    """Time-ordered and unique: ``tao runs list`` sorts by it."""
    return f"{time.time_ns() // 1_000_000:012x}{secrets.token_hex(6)}"


@dataclass(frozen=True, slots=True)
class Built:
    """An agent's parts, made from its config."""

    config: RunConfig
    model: Model
    setup: LoopSetup
    output_type: object
    """What ``result.output`` is made as: the Python type given, else plain JSON."""


#: The model of an agent: a spec, a backend, or a list that falls back in order.
Models = str | Model | Sequence[str | Model]


def make_config(
    model: Models | None,
    tools: Sequence[str | Tool | Callable[..., object]] | None,
    config: RunConfig | None,
    settings: Mapping[str, object],
) -> RunConfig:
    """One RunConfig from the agent's arguments: explicit ones win over ``config``.

    A keyword that names no setting is refused here, when the agent is made, with the
    nearest name (:class:`UnknownSettingError`), never ignored until a run reads it."""
    for key in settings:
        if key not in KEYWORDS:
            raise _unknown(key)
    changes = {key: _setting(key, value) for key, value in settings.items()}
    if "output_type" in changes:  # a Python type is recorded as its JSON Schema
        output_type = changes.pop("output_type")
        changes["output_schema"] = None if output_type is None else schema_of(output_type)
    if isinstance(model, (list, tuple)):  # fallback models: the first, then the others
        if not model:
            raise ConfigError("no model: the list of models is empty")
        named = [m for m in model if isinstance(m, str)]
        rebuildable = len(named) == len(model)
        changes["model"] = model[0] if rebuildable else None
        changes["fallback_models"] = tuple(named[1:]) if rebuildable else ()
    elif isinstance(model, str):
        changes["model"] = model
    elif model is not None:
        changes["model"] = None  # an object: recorded runs cannot rebuild it by name
    if tools is not None:
        specs = [tools] if isinstance(tools, str) else list(tools)
        changes["tools"] = tuple(t if isinstance(t, str) else None for t in specs)
    return (config or RunConfig()).replace(**changes)


def _unknown(key: str) -> UnknownSettingError:
    close = difflib.get_close_matches(key, sorted(KEYWORDS), n=1)
    known = ", ".join(sorted(KEYWORDS))
    hint = f"; did you mean {close[0]!r}?" if close else f"; the settings are {known}"
    return UnknownSettingError(f"unknown setting {key!r}{hint}")


def _setting(key: str, value: object) -> object:
    if key in _PATH_SETTINGS and value is not None:
        return str(Path(str(value)).resolve())
    return value


def build_setup(
    model: Models | None,
    tools: Sequence[str | Tool | Callable[..., object]] | None,
    config: RunConfig | None,
    settings: Mapping[str, object],
    *,
    ask: Callable[[str], str] | None = None,
    api_key: str | None = None,
    policy: Policy | None = None,
) -> Built:
    """Everything an agent needs, decided from its config (and the live objects beside it).

    ``policy``: the folders it lets the model write without asking are the only ones
    sandboxed children may write (:func:`tao.sandbox.writable.writable_folders`), and
    its ``[mcp]`` table is what makes an MCP tool read-only (SPEC S3; no policy: none is)."""
    from tao.sandbox.settings import Sandbox
    from tao.sandbox.writable import writable_folders
    from tao.tools.registry import resolve_tools

    config = make_config(model, tools, config, settings)
    remember_environment(config.pass_env)  # values a tool may echo, hidden verbatim (S5)
    remember([api_key])
    backend = _backend(model, config, api_key)
    if config.max_cost_usd is not None and not cost_known(backend):
        raise ConfigError(
            f"a cost limit (--max-cost / max_cost_usd) cannot be kept with {backend.name}: "
            "the price table has no price for it, so its cost is unknown"
        )
    specs = tools if tools is not None else [t for t in config.tools if t is not None]
    project = Path(config.project or ".")
    writable = writable_folders(policy, project) if policy is not None else ()
    sandbox = Sandbox(
        pass_env=config.pass_env, network="tests" in config.network, writable=writable
    )
    resolved = resolve_tools(
        specs, project=config.project, corpus=config.corpus, ask=ask, sandbox=sandbox
    )
    named = {tool.name: tool for tool in resolved}
    # An MCP tool exists only once its module is loaded; importing it here would build its
    # pydantic model, which reads every distribution's entry points (a broken one must
    # not end a run without MCP tools in a traceback: tests/cli/test_plugins.py).
    mcp_tool = sys.modules.get("tao.tools.mcp_tool")
    if policy is not None and mcp_tool is not None:
        named.update(
            (name, tool.judged(policy.mcp))
            for name, tool in named.items()
            if isinstance(tool, mcp_tool.McpTool)
        )
    if named and config.compaction != "none" and "recall" not in named:
        named["recall"] = make_tool(recall, trusted_output=True)  # fenced by the loop
    named["finish"] = make_tool(finish)
    return Built(config, backend, _loop_setup(config, backend, named), settings.get("output_type"))


def _backend(model: Models | None, config: RunConfig, api_key: str | None) -> Model:
    """The model the run asks: one, or several that fall back in order. ``base_url`` and
    ``api_key`` go to the first; each fallback reaches its provider as its spec and
    environment say (``ANTHROPIC_BASE_URL``, ``OPENAI_API_KEY``...)."""
    if isinstance(model, (list, tuple)):
        loaded = [load_model(m, base_url=config.base_url, api_key=api_key) for m in model[:1]]
        loaded += [load_model(m) for m in model[1:]]
        return with_fallbacks(loaded[0], loaded[1:])
    given = model if model is not None and not isinstance(model, (str, Sequence)) else None
    if given is None and config.model is None:
        raise ConfigError("no model: give a model spec or a model object")
    primary = load_model(given or str(config.model), base_url=config.base_url, api_key=api_key)
    return with_fallbacks(primary, [load_model(spec) for spec in config.fallback_models])


def _loop_setup(config: RunConfig, model: Model, tools: dict[str, Tool]) -> LoopSetup:
    labels = get_labels(config.lang)
    native = getattr(model, "supports_tools", False)
    if config.protocol == "native" and not native:
        raise ConfigError(f"{model.name} does not support native tool calling; use text")
    protocol: Literal["text", "native"] = (
        "native"
        if config.protocol == "native" or (config.protocol == "auto" and native)
        else "text"
    )
    grammar = answer_grammar = None
    if config.grammar and protocol == "text" and model.supports_grammar:
        from tao.protocol.grammar import react_grammar

        paths = [n for n, t in tools.items() if len(t.param_names) == 1 and t.path_params]
        schemas = {
            name: tool.schema
            for name, tool in tools.items()
            if len(tool.param_names) > 1 or name in paths
        }
        grammar = react_grammar(
            labels, list(tools), answer_schema=config.output_schema, schemas=schemas, paths=paths
        )
        answer_grammar = react_grammar(labels, [], answer_schema=config.output_schema)
    output = OutputSpec(config.output_schema) if config.output_schema is not None else None
    if config.system_prompt:
        system = config.system_prompt
    elif protocol == "native":
        system = prompts.native_system_prompt(labels)
    else:  # recall is not announced: the stubs that need it say how to call it
        system = prompts.system_prompt(labels, [t for n, t in tools.items() if n != "recall"])
    if output is not None:
        system += "\n" + output.hint()
    if config.compaction not in COMPACTIONS:
        policy_named(config.compaction)  # a policy that cannot load fails here, not mid-run
    return LoopSetup(
        config=config,
        labels=labels,
        tools=tools,
        system_prompt=system,
        protocol=protocol,
        grammar=grammar,
        answer_grammar=answer_grammar,
        send_stop=model.supports_stop,
        output=output,
        window=_window(model, config),
        count=counter_of(model) if counter_of(model) is not estimate else None,
    )


def _window(model: Model, config: RunConfig) -> int | None:
    """The window: set, the backend's own, the table's, else what the provider's model-info
    endpoint says (asked once, here, with a short timeout; a run that compacts nothing
    does not ask). ``None``: learned from the first refusal for size."""
    known = window_of(model, config.context_window)
    if known is not None or config.compaction == "none":
        return known
    connection = getattr(model, "connection", None)
    return reported_window(
        model.name.partition(":")[0],
        getattr(model, "base_url", None),
        str(getattr(model, "model", "")),
        getattr(connection, "api_key", None),
    )


@dataclass(frozen=True, slots=True)
class Start:
    """A run about to be driven: a fresh one, or one reopened from its checkpoint."""

    result: RunResult
    checkpoint: Checkpoint | None
    prior: tuple[Message, ...] = ()
    """The transcript of the run this one follows up; its task comes after it."""
    lease: RunLease | None = None
    """The run's lease, already taken (a resumed run: before its checkpoint was read)."""


def begin(task: str, model_name: str, config: RunConfig, parent: Parent | None = None) -> Start:
    """A new run; a follow-up of ``parent`` starts from its whole transcript."""
    result = RunResult(
        run_id=new_run_id(),
        task=task,
        model=model_name,
        lang=config.lang,
        started_at=time.time(),
        config=config,
        parent_id=parent.run_id if parent is not None else None,
    )
    return Start(result, None, parent.messages if parent is not None else ())


@dataclass(frozen=True, slots=True)
class Parent:
    """The ended run a follow-up continues (``history=``, ``tao run --continue``)."""

    run_id: str
    messages: tuple[Message, ...]
    """Its whole transcript, the final answer included."""
    model: str | None
    """Its model spec: a scripted model given the same spec goes on with its script."""
    model_calls: int
    """Model calls of the whole conversation so far: this run's and its own parents'."""


def follow(
    history: str | RunResult, store: Store | None, memory: Mapping[str, Checkpoint]
) -> Parent:
    """The run a follow-up continues. One that has not ended (running, paused for approval,
    interrupted) is refused: its last turn is not over, so it is resumed, not followed up."""
    run_id = history if isinstance(history, str) else history.run_id
    checkpoint: Checkpoint | None
    if isinstance(history, RunResult) and run_id in memory:  # an agent with record=False
        status, checkpoint, config = history.status, memory[run_id], history.config
        calls = history.usage.model_calls
    else:  # from the run log (the default one, for an agent that records none)
        summary, checkpoint, calls = _stored(store, run_id)
        run_id, status, config = summary.run_id, summary.status, summary.config
    if status.resumable:
        raise ResumeError(
            f"run {run_id} has not ended (status {status}), so it cannot be continued; "
            f"finish it first with `tao resume {run_id}`"
        )
    if checkpoint is None:
        raise ResumeError(f"run {run_id} recorded no transcript to continue from")
    model = config.model if config is not None else None
    return Parent(run_id, checkpoint.messages, model, calls)


def _stored(store: Store | None, run_id: str) -> tuple[RunSummary, Checkpoint | None, int]:
    if store is None:
        from tao.store.factory import open_store

        with open_store() as log:
            return _stored(log, run_id)
    summary = store.get_summary(run_id)
    return summary, store.load_state(summary.run_id), _conversation_calls(store, summary)


def _conversation_calls(store: Store, summary: RunSummary) -> int:
    calls, seen = summary.model_calls, {summary.run_id}
    while summary.parent_id is not None and summary.parent_id not in seen:
        seen.add(summary.parent_id)
        summary = store.get_summary(summary.parent_id)
        calls += summary.model_calls
    return calls


def reopen(
    run: str | RunResult,
    approve: Decision | None,
    store: Store | None,
    memory: MutableMapping[str, Checkpoint],
) -> Start:
    """Load a run and its last checkpoint; refuse runs that already ended."""
    run_id = run if isinstance(run, str) else run.run_id
    lease = None
    if store is not None:
        run_id = store.resolve(run_id)
        lease = _take(store, run_id)  # first: the checkpoint read is then the latest one
        try:
            return _reopened(*_stored_run(store, run_id), approve, lease)
        except BaseException:
            lease.release()
            raise
    if isinstance(run, str) or run_id not in memory:
        raise ResumeError(f"run {run_id} is not in this agent's memory; record runs to resume them")
    return _reopened(run, memory[run_id], approve, None)


def _take(store: Store, run_id: str) -> RunLease:
    """The run's lease, taken: :class:`~tao.errors.RunBusyError` while another process
    acts for it (SPEC R5)."""
    from tao.store.heartbeat import RunLease

    lease = RunLease(store, run_id)
    lease.take()
    return lease


def _stored_run(store: Store, run_id: str) -> tuple[RunResult, Checkpoint | None]:
    return store.get_run(run_id), _load(store, run_id)


def _reopened(
    result: RunResult,
    checkpoint: Checkpoint | None,
    approve: Decision | None,
    lease: RunLease | None,
) -> Start:
    run_id = result.run_id
    fresh = result.status in (Status.INTERRUPTED, Status.QUEUED) and not result.steps
    if checkpoint is None and fresh:
        # killed before its first checkpoint, or submitted and never started: start it now
        result.status = Status.RUNNING
        return Start(result, None, lease=lease)
    if not result.status.resumable or checkpoint is None:
        reason = f": {result.stop_reason}" if result.stop_reason else ""
        raise ResumeError(
            f"run {run_id} cannot be resumed: it ended with status {result.status}{reason}"
        )
    if approve is not None and checkpoint.pending:
        decisions = {**checkpoint.decisions, **{p.id: approve for p in checkpoint.pending}}
        record = Approval.taken(approve, "python")  # agent.resume(run_id, approve=...)
        approvals = {**checkpoint.approvals, **{p.id: record for p in checkpoint.pending}}
        checkpoint = dataclasses.replace(checkpoint, decisions=decisions, approvals=approvals)
    result.status, result.error, result.pending = Status.RUNNING, None, None
    if checkpoint.step is not None:
        _redo_turn(result, checkpoint.step)
    return Start(result, checkpoint, lease=lease)


def _redo_turn(result: RunResult, step: int) -> None:
    """Forget the stored steps of the turn the checkpoint stopped in: the loop makes them
    again (read-only calls redone, side effects from their journal, SPEC R1), and the run
    log keeps one row per step. A crash after they were stored, before the checkpoint that
    ends their turn, would otherwise count them twice."""
    kept = [s for s in result.steps if s.index < step]
    if len(kept) < len(result.steps):
        result.steps = kept
        result.usage = functools.reduce(Usage.plus, kept, Usage())


def _load(store: Store, run_id: str) -> Checkpoint | None:
    try:
        return store.load_state(run_id)
    except StateError as error:
        raise ResumeError(f"run {run_id} cannot be resumed: {error}") from None
