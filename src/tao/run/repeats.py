"""Doom loops, caught: a call identical to an earlier one is marked, answered, and bounded (L12).

Models stuck on a problem often call the same tool with the same arguments again
and again. A call counts as a repeat when the same tool was called with the same
canonical arguments earlier in the run, with no state-changing call between.

- A read-only repeat is answered from the earlier result: running it again could
  not say anything new, and the observation tells the model so.
- A repeat of a *volatile* tool (:attr:`tao.tools.base.Tool.volatile`: a pager, a poll)
  runs again, since it may well say something new; it counts as a repeat only when it
  says exactly what it said the time before.
- A side-effecting repeat still goes through approval and runs (the world may have
  changed); it is marked all the same.
- A call that failed changed nothing, whatever its effects: an identical retry is a
  repeat, and it does not make the calls before it forgettable (issue 30). That covers
  calls that could not even start (arguments that do not fit, an unknown tool), keyed by
  the text the model wrote, and side-effecting calls whose observation is an ``Error:``.
  Only a side-effecting call that succeeded starts afresh.
- Past ``max_repeats`` repeats the run ends, as a budget does, and says why.

Pure bookkeeping for :mod:`tao.run.loop`: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from tao.state.calls import Outcome, Ready
from tao.state.frozen import frozen
from tao.state.jsontypes import JSONObject, canonical_json
from tao.state.result import Step, StepKind
from tao.tools.base import Tool


def call_key(tool: str, arguments: JSONObject) -> str:
    """Equal for the same tool with the same canonical arguments."""
    return f"{tool}\0{canonical_json(arguments)}"


def unready_key(tool: str, argument: str | None) -> str:
    """Equal for the same call that could not start (no such tool, arguments that do not
    fit): the tool as named and the argument text as written, the only things it has."""
    return f"{tool}\0\0{argument or ''}"


def failed(observation: str) -> bool:
    """Whether a call's observation says it failed: every refusal, crash and misfit is
    reported as ``Error: …`` (SPEC L4)."""
    return observation.startswith("Error:")


@frozen
class Earlier:
    """The first call of a run of identical ones: its step and what it returned."""

    step: int
    observation: str


@dataclass(slots=True)
class Repeats:
    limit: int
    """Repeats allowed in a run; one more ends it (``--max-repeats``)."""
    seen: dict[str, Earlier] = field(default_factory=dict)
    """Calls made since the last state change, by :func:`call_key`."""
    count: int = 0

    @classmethod
    def replay(cls, limit: int, history: Iterable[Step], tools: Mapping[str, Tool]) -> Repeats:
        """The bookkeeping of a resumed run, rebuilt from the steps it already has."""
        repeats = cls(limit)
        for step in history:
            if step.kind not in (StepKind.ACTION, StepKind.UNKNOWN_TOOL) or step.tool in (
                None,
                "finish",
            ):
                continue
            repeats.count += step.repeat_of is not None
            tool = tools.get(step.tool or "")
            if tool is None or step.arguments is None:  # it could not start
                key = unready_key(step.tool or "", step.unparsed)
                repeats.seen.setdefault(key, Earlier(step.index, step.observation or ""))
                continue
            if step.repeat_of is not None and tool.volatile:
                continue  # said what the call it repeats said (its observation is the note)
            key = call_key(tool.name, step.arguments)
            repeats.remember(step.index, tool, key, step.observation or "")
        return repeats

    def remember(self, index: int, tool: Tool, key: str, observation: str) -> None:
        """Note a call (by :func:`call_key`) that ran; one that may have changed the world
        forgets the rest. A volatile call that said something new starts a new run of
        identical ones: its repeats are compared with this result. A failed call changed
        nothing, so it forgets nothing."""
        if not tool.read_only and not failed(observation):
            self.seen.clear()
        earlier = self.seen.get(key)
        if earlier is None or (tool.volatile and earlier.observation != observation):
            self.seen[key] = Earlier(index, observation)

    def note(
        self,
        first: int,
        ran: Mapping[int, Ready],
        keys: Mapping[int, str],
        earlier: dict[int, Earlier],
        outcomes: dict[int, Outcome],
        unready: Iterable[int] = (),
    ) -> None:
        """Count one reply's repeats (``earlier``: by position, from :attr:`seen`) and
        remember the calls that ran, and those that could not start (``unready``, keyed by
        :func:`unready_key`). A volatile repeat that ran again and said something new
        is no repeat: it leaves ``earlier``. One that said the same is answered as a repeat
        in ``outcomes``, and so is a call that could not start, again. ``first`` is the step
        index of position 0."""
        for i in unready:
            if i in earlier:
                outcomes[i] = replace(outcomes[i], observation=_again(outcomes[i], earlier[i]))
            else:
                self.seen.setdefault(keys[i], Earlier(first + i, outcomes[i].observation))
        for i, ready in ran.items():
            observation = outcomes[i].observation
            if i in earlier and ready.tool.volatile:
                if observation == earlier[i].observation:  # an error said again, too
                    outcomes[i] = replace(outcomes[i], observation=_note(ready, earlier[i]))
                else:
                    del earlier[i]
            self.remember(first + i, ready.tool, keys[i], observation)
        self.count += len(earlier)

    def answer(self, ready: Ready, earlier: Earlier) -> Outcome:
        """A read-only repeat, answered from the earlier result without running it."""
        return Outcome(
            StepKind.ACTION,
            _note(ready, earlier),
            ready.tool.name,
            ready.arguments,
            source=None if ready.tool.trusted_output else ready.tool.name,
        )

    def exceeded(self) -> str | None:
        """Why the run must end, once it keeps repeating itself; else ``None``."""
        if self.count <= self.limit:
            return None
        return (
            f"repeat limit of {self.limit} reached: the model kept calling the same tool "
            "with the same arguments"
        )


def _again(outcome: Outcome, earlier: Earlier) -> str:
    """The Observation of a call that could not start, written again: its error, and that
    sending it unchanged will fail the same way."""
    return (
        f"{outcome.observation}\nThis is the same call as step {earlier.step}, and it failed "
        "the same way: change the arguments, or do something else."
    )


def _note(ready: Ready, earlier: Earlier) -> str:
    """The Observation of a repeat: the earlier result, and that repeating gives nothing new."""
    return (
        f"{ready.tool.name} was already called with these arguments in step "
        f"{earlier.step}; repeating it gives nothing new. Its result was:\n"
        f"{earlier.observation}\nDo not call it again: work with this result yourself and "
        "take the next step of the task, or finish."
    )
