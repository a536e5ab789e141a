"""The ReAct loop itself, free of I/O: it *yields* what it needs and is *sent* the answers.

Every state transition of a run is here (h11's "Rule 1"); :mod:`tao.agent` only
fulfils requests, with threads (``run``) or asyncio (``arun``). The loop never
reads a clock, a file or the network and never makes an id: the clock is passed
in, and everything else is a request its driver answers.

    ask the model ──> read its reply ──> [approve] ──> run the tool(s) ──> observe ──┐
         ^                                                                           │
         └─────────────────────── until finish or the budget ends ───────────────────┘

The requests and answers are the typed events of :mod:`tao.run.exchange`; the
generator returns an :class:`Ending`. Given a :class:`~tao.state.config.Checkpoint`
back, it continues from exactly there, in another process if need be, and never
runs a call with side effects twice unless a person says so (SPEC S3, R1): such calls
are journaled before they run and right after, and one the journal shows started but
not completed goes back to a person.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field

from tao.errors import InternalError
from tao.models.base import Message, ModelReply, ModelRequest, ToolSpec
from tao.models.window import estimate, overflow
from tao.protocol import native, prompts
from tao.protocol.text import FinalAnswer, ParseFailure
from tao.redact.known import seam, seam_width
from tao.run import journal
from tao.run.act import approval_reason, needs_approval, prepare, refuse
from tao.run.compaction import Context, make_room, recalled
from tao.run.exchange import (
    Answer,
    ApprovalAnswer,
    AskApproval,
    AskModel,
    ChildResume,
    Ending,
    LoopSetup,
    ModelAnswer,
    ModelFailure,
    Request,
    RunTools,
    SaveCheckpoint,
    StepsDone,
)
from tao.run.output import AnswerMismatch
from tao.run.policies import RECALL, policy_named
from tao.run.repeats import Repeats, call_key, unready_key
from tao.run.transcript import (
    Turn,
    action_step,
    calls_of,
    capped,
    closing,
    extend,
    failed_step,
    kept_reply,
    kept_text,
    make_step,
    opening,
    parse,
    refusal,
    stops,
)
from tao.state.budget import Budget, Usage
from tao.state.calls import Call, Outcome, Ready
from tao.state.config import Checkpoint, PendingCall
from tao.state.jsontypes import JSON
from tao.state.result import Status, Step, StepKind
from tao.tools.base import Tool


@dataclass(kw_only=True)
class _Run:
    """The loop's own running state: what it needs to decide, nothing it reports."""

    setup: LoopSetup
    clock: Callable[[], float]
    started: float
    usage: Usage
    steps: int
    repeats: Repeats = field(init=False)
    budget: Budget = field(init=False)
    specs: list[ToolSpec] | None = field(init=False)
    """Native tool calling: the tools as the backend is sent them, made once per run
    (``recall`` is sent only once something was compacted)."""
    context: Context = field(init=False)
    """The window, the compactions made, and what making more needs (issue 27)."""
    messages: list[Message] = field(default_factory=list)
    seam: str = ""
    """The end of the last observation, before :func:`tao.redact.known.seam` hid anything
    in it (memory only: a resumed run starts without it)."""
    approved: dict[str, JSON] = field(default_factory=dict)
    """By tool name, the state a person last approved for tools with a gate (SPEC S11);
    replaced, never edited, so a checkpoint may hold it by reference."""

    def __post_init__(self) -> None:
        setup = self.setup
        self.budget = Budget.of(setup.config)
        self.specs = None
        if setup.protocol == "native":
            output = setup.output.schema if setup.output is not None else None
            self.specs = native.tool_specs(list(setup.tools.values()), answer_schema=output)
        name, policy = policy_named(setup.config.compaction)
        self.context = Context(
            policy=policy,
            policy_name=name,
            window=setup.window,
            count=setup.count or estimate,
            reply_room=setup.config.max_reply_tokens,
            labels=setup.labels,
            protocol=setup.protocol,
        )

    def tool_specs(self) -> list[ToolSpec] | None:
        """The native tools sent now: ``recall`` only once an observation was compacted."""
        if self.specs is None or self.context.compactions:
            return self.specs
        return [spec for spec in self.specs if spec.name != RECALL]

    def elapsed(self) -> float:
        return self.clock() - self.started

    def checkpoint(
        self,
        turn: Turn | None = None,
        reply: ModelReply | None = None,
        *,
        pending: tuple[PendingCall, ...] = (),
        executing: bool = False,
    ) -> Checkpoint:
        """Where the run stands now (inside ``turn``, acting on ``reply``, or between
        steps); the transcript is copied by reference (append-only)."""
        return Checkpoint(
            messages=tuple(self.messages),
            elapsed_s=self.elapsed(),
            step=turn.index if turn is not None else None,
            reply=reply,
            pending=pending,
            decisions=dict(turn.decisions) if turn is not None else {},
            approvals=dict(turn.approvals) if turn is not None else {},
            executing=executing,
            completed=dict(turn.completed) if turn is not None else {},
            approved=self.approved,
            refused_calls=turn.refused if turn is not None else 0,
            compactions=tuple(self.context.compactions),
            window=self.context.window,
        )


Loop = Generator[Request, Answer, Ending]


def react(
    setup: LoopSetup,
    task: str,
    *,
    clock: Callable[[], float],
    usage: Usage | None = None,
    history: Sequence[Step] = (),
    resume: Checkpoint | None = None,
    prior: Sequence[Message] = (),
) -> Loop:
    """Thought, Action, Observation until an answer or a spent budget (SPEC L1-L6).

    ``usage`` and ``history`` are what a resumed run already spent and did;
    ``resume`` is its last checkpoint. ``prior`` is the whole transcript of the run a
    new one follows up: the new task comes after it.
    """
    run = _Run(setup=setup, clock=clock, started=clock(), usage=usage or Usage(), steps=0)
    run.steps = len(history)
    run.repeats = Repeats.replay(setup.config.max_repeats, history, setup.tools)
    run.context.note(history)
    if resume is None:
        run.messages = opening(setup, task, prior)
        run.approved = _baseline(setup.tools)
        # a run killed before its first step can still be resumed (SPEC R1)
        yield SaveCheckpoint(run.checkpoint())
    else:
        run.started -= resume.elapsed_s
        run.messages = list(resume.messages)
        run.approved = dict(resume.approved)
        run.context.compactions = list(resume.compactions)  # recorded, never decided again
        run.context.window = resume.window or run.context.window
        if history and history[-1].kind is StepKind.FINAL:  # killed after its answer was stored
            return Ending(Status.FINISHED, answer=history[-1].answer)
    while True:
        if resume is not None and resume.reply is not None and resume.step is not None:
            turn: Turn | Ending = _resumed(run, resume)
        else:
            turn = yield from _ask(run)
        if isinstance(turn, Ending):
            return turn
        resume = None
        outcome = yield from _respond(run, turn)
        if isinstance(outcome, Ending):
            return outcome
        if turn.forced:
            outcome = [step.replace(forced=True) for step in outcome]
        yield _done(run, outcome, checkpoint=True)
        final = outcome[0]  # an answer is a turn of its own
        if final.kind is StepKind.FINAL:
            forced = f"answer forced by {turn.forced}" if turn.forced else None
            return Ending(Status.FINISHED, answer=final.answer, stop_reason=forced)
        looping = run.repeats.exceeded()
        if looping is not None:
            return Ending(Status.MAX_STEPS, stop_reason=looping)


def _resumed(run: _Run, resume: Checkpoint) -> Turn:
    """The turn a checkpoint stopped in, with the decisions taken since."""
    if resume.reply is None or resume.step is None:
        raise InternalError("resumed a turn from a checkpoint with no step or reply")
    turn = Turn(resume.step, list(run.messages), ModelAnswer(resume.reply, 0.0))
    turn.decisions.update(resume.decisions)
    turn.approvals.update(resume.approvals)
    turn.shown.update((call.id, call.preview) for call in resume.pending)
    turn.executing = resume.executing
    turn.completed.update(resume.completed)
    turn.interrupted.update(call.id for call in resume.pending if call.interrupted)
    turn.refused = resume.refused_calls
    turn.compactions = tuple(c for c in resume.compactions if c.step == resume.step)
    for call in resume.pending:
        if call.child is not None:
            turn.children[call.position] = (*turn.children.get(call.position, ()), call)
    return turn


def _ask(run: _Run) -> Generator[Request, Answer, Turn | Ending]:
    """The next model reply, or how the run ends (a spent budget, a failed backend, a
    context window compaction cannot make room in)."""
    elapsed = run.elapsed()
    spent = run.budget.exhausted(run.usage.model_calls, elapsed, run.usage)
    if spent is not None:
        return Ending(Status.MAX_STEPS, stop_reason=spent)
    index, forced = run.steps + 1, _forcing(run)
    sent = list(run.messages)  # never edited once appended: one snapshot for request and step
    context = run.context
    context.new = []
    shown = context.shown(sent)
    if context.over(shown):
        full = yield from make_room(context, sent, index, "the prompt passed 80% of the window")
        if full is not None:
            return Ending(Status.MAX_STEPS, stop_reason=full)
        shown = context.shown(sent)
    request = _model_request(run, shown, index, elapsed, answer_only=forced is not None)
    announced = len(context.new)
    answer = yield AskModel(index, request, tuple(context.new))
    refused = overflow(answer.message) if isinstance(answer, ModelFailure) else None
    if refused is not None and isinstance(answer, ModelFailure) and context.policy is not None:
        # the reactive path (once): a refusal for size makes room and asks again
        context.learn(refused, shown)
        said = f"{refused.requested:,} tokens" if refused.requested else "the request"
        full = yield from make_room(context, sent, index, f"the provider refused {said}")
        if full is not None:
            yield _done(run, [failed_step(index, sent, answer)], checkpoint=False)
            return Ending(Status.MAX_STEPS, stop_reason=full)
        shown = context.shown(sent)
        request = _model_request(run, shown, index, run.elapsed(), answer_only=forced is not None)
        answer = yield AskModel(index, request, tuple(context.new[announced:]))
        if isinstance(answer, ModelFailure) and overflow(answer.message) is not None:
            yield _done(run, [failed_step(index, sent, answer)], checkpoint=False)
            window = f"{context.window:,}-token " if context.window else ""
            return Ending(
                Status.MAX_STEPS,
                stop_reason=f"the {window}context window is full: the provider refused the "
                f"request again after compaction ({answer.message})",
            )
    if isinstance(answer, ModelFailure):
        yield _done(run, [failed_step(index, sent, answer)], checkpoint=False)
        late = run.budget.out_of_time(run.elapsed())  # the call had the time left (L1, L5)
        if late is not None:
            return Ending(Status.MAX_STEPS, stop_reason=f"{late} during a model call")
        if refused is not None:  # no policy: say what would have made room
            return Ending(Status.ERROR, error=f"{answer.message} ({_NO_ROOM})")
        return Ending(Status.ERROR, error=answer.message)
    if not isinstance(answer, ModelAnswer):
        raise InternalError(f"the driver answered a model call with {type(answer).__name__}")
    if context.estimated and context.window is not None and context.policy is not None:
        context.calibrate(shown, answer.reply.input_tokens)
    answer = _with_summaries(answer, context)
    return Turn(index, sent, answer, forced=forced, compactions=tuple(context.new))


#: What a refusal for size says when the run compacts nothing.
_NO_ROOM = (
    "the model's context window is full; tao compacts older steps to make room: give the "
    "window with --context-window TOKENS (RunConfig.context_window) and a policy with "
    "--compaction elide or summarize (RunConfig.compaction)"
)


def _with_summaries(answer: ModelAnswer, context: Context) -> ModelAnswer:
    """The reply with the summary calls made for its request counted in (usage and cost)."""
    made = [c for c in context.new if c.input_tokens or c.output_tokens]
    if not made:
        return answer
    reply = answer.reply
    cost = reply.cost_usd
    for record in made:
        cost = None if cost is None or record.cost_usd is None else cost + record.cost_usd
    reply = dataclasses.replace(
        reply,
        input_tokens=reply.input_tokens + sum(c.input_tokens for c in made),
        output_tokens=reply.output_tokens + sum(c.output_tokens for c in made),
        cost_usd=cost,
    )
    return ModelAnswer(reply, answer.duration_s)


def _forcing(run: _Run) -> str | None:
    """Why the next reply may only be the answer: the last step of the budget (as the ReAct
    paper's own code ends a trajectory), or a model that keeps repeating itself."""
    limit = run.budget.max_steps
    if limit > 1 and run.usage.model_calls + 1 >= limit:
        return f"the step limit of {limit}"
    if run.repeats.limit and run.repeats.count >= run.repeats.limit:
        return "repeated calls"
    return None


def _respond(run: _Run, turn: Turn) -> Generator[Request, Answer, list[Step] | Ending]:
    """Read one reply, run what it asks for, extend the transcript.

    Returns the new steps, or an Ending when a call waits for a person's approval.
    """
    setup, decisions = run.setup, turn.decisions
    reply = capped(setup, turn, kept_reply(setup, turn.answer.reply))
    parsed = parse(setup, turn.index, reply)
    if isinstance(parsed, FinalAnswer):
        return _final(run, turn, reply, parsed)
    if isinstance(parsed, ParseFailure):
        remind = prompts.native_reminder if setup.protocol == "native" else prompts.reminder
        reminder = Outcome(StepKind.PARSE_ERROR, remind(setup.labels, parsed.reason), "", None)
        extend(run.setup, run.messages, turn.index, reply, parsed.text, [], [reminder])
        return [
            make_step(turn, StepKind.PARSE_ERROR, parsed.thought, observation=reminder.observation)
        ]
    calls = calls_of(parsed)
    outcomes, ready = _prepare(calls, setup.tools)
    keys = {i: call_key(r.tool.name, r.arguments) for i, r in ready.items()}
    unready = list(outcomes)  # could not start: repeats too when written again (L12)
    keys.update((i, unready_key(outcomes[i].tool, calls[i].argument)) for i in unready)
    earlier = {i: e for i, key in keys.items() if (e := run.repeats.seen.get(key)) is not None}
    for i in [i for i in earlier if i in ready and ready[i].tool.read_only]:
        if ready[i].tool.volatile:
            continue
        outcomes[i] = run.repeats.answer(ready.pop(i), earlier[i])  # not run again
    outcomes.update(_recalled(run, ready))
    gated = _gated(run, turn, ready, parsed.thought)
    gated_ids = {i: call.id for i, call in gated.items()}  # before the journal takes some
    runnable, journaled = dict(ready), {}
    if gated:  # side effects: a yes for each exact call, or the run waits (SPEC S3)
        journaled = journal.read(turn, gated, ready)
        outcomes.update(journaled)
        waiting = yield from _approve(gated, ready, turn)
        if waiting:
            yield SaveCheckpoint(run.checkpoint(turn, reply, pending=waiting))
            return Ending(Status.AWAITING_APPROVAL, pending=waiting)
        for i, call in gated.items():
            if decisions[call.id] is not True:
                outcomes[i] = refuse(ready.pop(i), decisions[call.id], call.interrupted)
    outcomes.update((yield from _run_calls(run, turn, reply, ready, gated)))
    waiting = tuple(call for outcome in outcomes.values() for call in outcome.waiting)
    if waiting:  # a child run stopped for a person: so does this run, on the child's calls
        paused = run.checkpoint(turn, reply, pending=waiting, executing=bool(turn.completed))
        yield SaveCheckpoint(paused)
        return Ending(Status.AWAITING_APPROVAL, pending=waiting)
    ran = {i: r for i, r in runnable.items() if i in ready or i in journaled}
    run.repeats.note(turn.index, ran, keys, earlier, outcomes, unready)
    ordered = _seamed(run, [outcomes[i] for i in range(len(calls))])
    native_calls = list(parsed.calls) if isinstance(parsed, native.NativeCalls) else []
    note = refusal(setup, turn)
    text = kept_text(parsed, reply)
    extend(setup, run.messages, turn.index, reply, text, native_calls, ordered, note)
    approvals = {i: turn.approvals.get(key) for i, key in gated_ids.items()}
    steps = [
        action_step(turn, parsed.thought, i, call, outcome, earlier.get(i), approvals.get(i))
        for i, (call, outcome) in enumerate(zip(calls, ordered, strict=True))
    ]
    if note is not None:  # the refused calls: one step, one observation, however many
        steps.append(make_step(turn, StepKind.ACTION, None, position=len(calls), observation=note))
    return steps


def _recalled(run: _Run, ready: dict[int, Ready]) -> dict[int, Outcome]:
    """The ``recall`` calls, taken out of ``ready`` and answered from the run's own record
    of full observations (issue 27): the loop holds it, so no tool runs."""
    outcomes = {}
    for i in [i for i, r in ready.items() if r.tool.name == RECALL]:
        step = ready.pop(i).arguments.get("step")
        observation = recalled(run.context, step)
        outcomes[i] = Outcome(StepKind.ACTION, observation, RECALL, {"step": step}, source=RECALL)
    return outcomes


def _prepare(
    calls: list[Call], tools: dict[str, Tool]
) -> tuple[dict[int, Outcome], dict[int, Ready]]:
    """The calls that may run (tool found, arguments valid), by position, and the
    outcomes of those that may not."""
    outcomes: dict[int, Outcome] = {}
    ready: dict[int, Ready] = {}
    for i, call in enumerate(calls):
        prepared = prepare(call, tools)
        if isinstance(prepared, Ready):
            ready[i] = prepared
        else:
            outcomes[i] = prepared
    return outcomes, ready


def _baseline(tools: Mapping[str, Tool]) -> dict[str, JSON]:
    """What the tools with a gate act on when the run starts: until a person approves
    something else, what their calls may act on unasked (SPEC S11). A gate that fails
    records nothing, and its calls ask."""
    approved: dict[str, JSON] = {}
    for name, tool in tools.items():
        if tool.gate is not None:
            try:
                approved[name] = tool.gate.snapshot()
            except Exception:  # noqa: S112 - nothing recorded: every call of it asks
                continue
    return approved


def _gated(
    run: _Run, turn: Turn, ready: dict[int, Ready], thought: str | None
) -> dict[int, PendingCall]:
    """The calls that need a yes: every call with side effects, and the calls of read-only
    tools whose gate says what they would act on is not what was approved (SPEC S3, S11).

    A gate judges the project as it is *before* the reply's calls run, and they run
    together: a ``write_file`` of ``conftest.py`` beside ``run_tests`` in one reply would
    change the code under a test run already let through. So a gated call beside calls
    with side effects asks too, naming them."""
    gated: dict[int, PendingCall] = {}
    effects = sorted({r.tool.name for r in ready.values() if not r.tool.read_only})
    for i, r in ready.items():
        if r.tool.gate is not None and r.tool.read_only:
            why = approval_reason(r, run.approved)
            if why is None and effects:
                why = (
                    f"{r.tool.name} runs beside {', '.join(effects)} in the same reply, which "
                    "may change the code it executes before or while it runs (SPEC S11)"
                )
            if why is not None:
                gated[i] = journal.pending(turn.index, i, r, why, thought)
        elif needs_approval(r):  # an MCP tool says why it asks though its server said not
            gated[i] = journal.pending(turn.index, i, r, r.tool.approval_note, thought)
    return gated


def _note_approved(run: _Run, ready: Ready, shown: str | None) -> None:
    """A gated call about to run was approved on seeing ``shown``: what it acts on, if still
    that, is what later calls of its tool may act on unasked (SPEC S11)."""
    gate = ready.tool.gate
    if gate is None:
        return
    try:
        state = gate.approved(shown)
    except Exception:  # nothing newly approved: later calls ask
        return
    if state is not None:
        run.approved = {**run.approved, ready.tool.name: state}


def _run_tools(
    run: _Run, turn: Turn, ready: dict[int, Ready], previews: tuple[str | None, ...]
) -> Generator[Request, Answer, Sequence[Outcome]]:
    """Have the driver run ``ready``; one outcome each, in order.

    A call whose tool has a gate executes project code (``run_tests``). It runs after every
    other call of the reply has finished, and alone, one after the other: a write of the
    same reply has landed before the code runs, and one test run cannot change the code
    under another (issue 26). Its read-only status is decided again at that moment: an
    approved call runs only if the code is still what the person was shown (``confirm``),
    and one let through unasked is refused if the code changed since the reply was read."""
    executing = [i for i, r in ready.items() if r.tool.gate is not None]
    if not executing:
        return (yield from _run_batch(run, turn, ready, previews))
    shown = dict(zip(ready, previews, strict=True))
    rest = {i: r for i, r in ready.items() if i not in executing}
    outcomes: dict[int, Outcome] = {}
    if rest:
        done = yield from _run_batch(run, turn, rest, tuple(shown[i] for i in rest))
        outcomes.update(zip(rest, done, strict=True))
    for i in executing:
        changed = None if shown[i] is not None else _code_changed(run, ready[i])
        if changed is not None:
            outcomes[i] = changed
            continue
        done = yield from _run_batch(run, turn, {i: ready[i]}, (shown[i],))
        outcomes[i] = done[0]
    return [outcomes[i] for i in ready]


def _code_changed(run: _Run, ready: Ready) -> Outcome | None:
    """A call that executes project code, let through unasked when the reply was read, is
    refused if the calls before it changed that code: it would run code nobody saw."""
    why = approval_reason(ready, run.approved)
    if why is None:
        return None
    observation = (
        f"Error: {ready.tool.name} was not run: an earlier call of this reply changed what it "
        f"would execute ({why}). Call it again in a new reply; a person will be asked."
    )
    return Outcome(StepKind.ACTION, observation, ready.tool.name, ready.arguments)


def _run_batch(
    run: _Run, turn: Turn, ready: dict[int, Ready], previews: tuple[str | None, ...]
) -> Generator[Request, Answer, Sequence[Outcome]]:
    """Have the driver run ``ready`` together within the time left; one outcome each."""
    left = run.budget.max_seconds - run.elapsed()
    children = tuple(_child_resume(turn, i) for i in ready) if turn.children else ()
    done = yield RunTools(turn.index, tuple(ready.values()), previews, left, tuple(ready), children)
    if not isinstance(done, (list, tuple)):  # not the ABC: its check costs more than a call
        raise InternalError(f"the driver answered RunTools with {type(done).__name__}")
    return done


def _seamed(run: _Run, outcomes: list[Outcome]) -> list[Outcome]:
    """Each observation read after the one before it, so that a known secret cut in two
    across them is hidden (SPEC S8; :func:`tao.redact.known.seam`)."""
    seamed: list[Outcome] = []
    for outcome in outcomes:
        text = outcome.observation
        hidden = seam(run.seam, text)
        run.seam = text[-seam_width() :]
        seamed.append(
            outcome if hidden == text else dataclasses.replace(outcome, observation=hidden)
        )
    return seamed


def _run_calls(
    run: _Run, turn: Turn, reply: ModelReply, ready: dict[int, Ready], gated: dict[int, PendingCall]
) -> Generator[Request, Answer, dict[int, Outcome]]:
    """Run the calls allowed to run: between the journal's records if any has side effects."""
    if gated and ready:
        return (yield from _run_effects(run, turn, reply, ready, gated))
    if not ready:
        return {}
    # read-only calls: no journal, nobody was shown a thing
    done = yield from _run_tools(run, turn, ready, (None,) * len(ready))
    return dict(zip(ready, done, strict=True))


def _child_resume(turn: Turn, position: int) -> ChildResume | None:
    """The paused child run the call at ``position`` continues, with the decisions taken on
    its calls (a call still undecided is asked again by the child, or pauses it again)."""
    waiting = turn.children.get(position)
    if not waiting or waiting[0].child is None:
        return None
    decisions, approvals = {}, {}
    for call in waiting:
        if call.child is not None and call.id in turn.decisions:
            decisions[call.child.call] = turn.decisions[call.id]
            if call.id in turn.approvals:
                approvals[call.child.call] = turn.approvals[call.id]
    return ChildResume(waiting[0].child.run_id, decisions, approvals)


def _run_effects(
    run: _Run, turn: Turn, reply: ModelReply, ready: dict[int, Ready], gated: dict[int, PendingCall]
) -> Generator[Request, Answer, dict[int, Outcome]]:
    """Run the allowed calls of a reply with side effects between the journal's two records
    (SPEC R1): one before any effect, and one with what each returned, right after them
    and before anything else."""
    effects = [i for i in ready if i in gated]
    for i in effects:
        _note_approved(run, ready[i], turn.shown.get(gated[i].id))
    if effects:
        yield SaveCheckpoint(run.checkpoint(turn, reply, executing=True))
    previews = tuple(turn.shown.get(gated[i].id) if i in gated else None for i in ready)
    done = yield from _run_tools(run, turn, ready, previews)
    outcomes = dict(zip(ready, done, strict=True))
    if effects:
        turn.completed.update((gated[i].id, journal.completion(outcomes[i])) for i in effects)
        yield SaveCheckpoint(run.checkpoint(turn, reply, executing=True))
    return outcomes


def _final(run: _Run, turn: Turn, reply: ModelReply, parsed: FinalAnswer) -> list[Step]:
    """The answer, checked against the output schema; a mismatch goes back to the model,
    naming the field, as a failed ``finish`` call (SPEC L13)."""
    answer, output = parsed.answer, run.setup.output
    try:
        answer = output.check(answer) if output is not None else answer
    except AnswerMismatch as error:
        failed = Outcome(StepKind.ACTION, f"Error: {error}", "finish", None)
        extend(run.setup, run.messages, turn.index, reply, parsed.text, [], [failed])
        return [
            make_step(
                turn,
                StepKind.ACTION,
                parsed.thought,
                tool="finish",
                arguments={"answer": parsed.answer},
                observation=failed.observation,
            )
        ]
    run.messages.extend(closing(run.setup, reply, parsed))  # the transcript ends with the answer
    return [
        make_step(turn, StepKind.FINAL, parsed.thought, tool="finish", arguments={"answer": answer})
    ]


def _approve(
    gated: dict[int, PendingCall], ready: dict[int, Ready], turn: Turn
) -> Generator[Request, Answer, tuple[PendingCall, ...]]:
    """Ask about the gated calls no decision covers; the ones still undecided after that.

    ``turn.shown`` gains what each asked call's preview was, so the call can be confirmed
    unchanged right before it runs; ``turn.approvals`` who decided, when and where."""
    decisions, shown = turn.decisions, turn.shown
    ask = [i for i, call in gated.items() if call.id not in decisions]
    if not ask:
        return ()
    answer = yield AskApproval(
        gated[ask[0]].step, tuple(ready[i] for i in ask), tuple(gated[i] for i in ask)
    )
    if not isinstance(answer, ApprovalAnswer):
        raise InternalError(f"the driver answered an approval with {type(answer).__name__}")
    waiting = []
    records = answer.approvals or (None,) * len(ask)
    for i, decision, preview, record in zip(
        ask, answer.decisions, answer.previews, records, strict=True
    ):
        shown[gated[i].id] = preview
        if decision is None:
            waiting.append(dataclasses.replace(gated[i], preview=preview))
        else:
            decisions[gated[i].id] = decision
            if record is not None:
                turn.approvals[gated[i].id] = record
    return tuple(waiting)


def _model_request(
    run: _Run, sent: list[Message], index: int, elapsed: float, *, answer_only: bool = False
) -> ModelRequest:
    """What the model is sent; ``answer_only`` narrows its choice to the final answer (the
    grammar to ``finish``/the answer line, native tools to ``finish``)."""
    setup, specs, grammar = run.setup, run.tool_specs(), run.setup.grammar
    if answer_only:
        specs = [spec for spec in specs or () if spec.name == "finish"] or specs
        grammar = setup.answer_grammar or grammar
    return ModelRequest(
        messages=sent,
        tools=specs,
        require_tool=any(spec.name == "finish" for spec in specs or ()),
        stop=stops(setup, index) if setup.send_stop else (),
        grammar=grammar,
        max_tokens=setup.config.max_reply_tokens,
        temperature=setup.config.temperature,
        timeout_s=max(run.budget.max_seconds - elapsed, 0.001),  # --max-seconds binds
    )


def _done(run: _Run, steps: list[Step], *, checkpoint: bool) -> StepsDone:
    """``steps`` counted: the request that hands them to the driver, with what the checkpoint
    after them is made from (they are stored together)."""
    for step in steps:
        run.steps += 1
        run.usage = run.usage.plus(step)
    run.context.note(steps)
    if not checkpoint:  # the run ends on a failed model call: nothing to continue from
        return StepsDone(tuple(steps), run.usage, None)
    return StepsDone(
        tuple(steps),
        run.usage,
        run.messages,
        len(run.messages),
        run.elapsed(),
        tuple(run.context.compactions),
        run.context.window,
    )
