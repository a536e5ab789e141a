"""A compaction as the run records it: which messages the model is shown how (issue 27).

Compaction changes only what the model *sees*. The run's transcript (every message,
every full observation) stays append-only, as the run log stores it; a
:class:`Compaction` says "show messages ``start`` to ``end`` of the transcript as these
``messages`` instead". The model's view is the transcript with the run's compactions
applied (:func:`view`): a pure function of two recorded things, so a resumed run (even
after ``kill -9``) rebuilds exactly the view the model was shown, without deciding again.

A later compaction may cover earlier ones (a range folded into one line, a rolling
summary): it then replaces them. Ranges start and end on turn boundaries, so two
records either nest or do not touch.

    shown = view(transcript, compactions)
"""

from __future__ import annotations

from collections.abc import Sequence

from tao.state.frozen import frozen
from tao.state.message import Message


@frozen(kw_only=True)
class Compaction:
    """One compaction: a range of the transcript and what the model is shown instead."""

    start: int
    """The first message of the range (an index into the run's transcript)."""
    end: int
    """One past its last message."""
    first_step: int
    """The first step whose messages the range holds."""
    last_step: int
    """The last such step: the steps the trace says were compacted."""
    messages: tuple[Message, ...]
    """What the model is shown for the range."""
    policy: str
    """Who decided what to show: ``elide``, ``summarize``, or a custom policy's name."""
    tokens_before: int
    """The model's view in tokens (counted or estimated) before this compaction."""
    tokens_after: int
    """And after it."""
    window: int
    """The context window it made room in, in tokens."""
    reason: str
    """Why now: the high-water mark was passed, or the provider refused a request."""
    step: int
    """The step whose model request was the first to be made with it."""
    input_tokens: int = 0
    """Tokens of the model call that made a summary (0: no call)."""
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    """What that call cost in US dollars (``None``: unknown)."""

    def describe(self) -> str:
        """One line for the trace: ``steps 1-12 compacted (elide): 5,210 -> 1,020 tokens``."""
        steps = (
            f"step {self.first_step}"
            if self.first_step == self.last_step
            else f"steps {self.first_step}-{self.last_step}"
        )
        return (
            f"{steps} compacted ({self.policy}): {self.tokens_before:,} -> "
            f"{self.tokens_after:,} tokens of a {self.window:,}-token window; {self.reason}"
        )


def active(compactions: Sequence[Compaction]) -> list[Compaction]:
    """The compactions in force, by position: a later one replaces those inside its range."""
    kept: list[Compaction] = []
    for record in compactions:
        kept = [c for c in kept if c.end <= record.start or c.start >= record.end]
        kept.append(record)
    return sorted(kept, key=lambda c: c.start)


def view(transcript: Sequence[Message], compactions: Sequence[Compaction]) -> list[Message]:
    """What the model is shown: ``transcript`` with ``compactions`` applied (in their order)."""
    if not compactions:
        return list(transcript)
    shown: list[Message] = []
    at = 0
    for record in active(compactions):
        shown.extend(transcript[at : record.start])
        shown.extend(record.messages)
        at = max(at, record.end)
    shown.extend(transcript[at:])
    return shown
