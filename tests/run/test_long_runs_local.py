"""A long run on the embedded model in a small window (issue 27's done-when, scaled down):
it reads every file, compacts, finishes, and between compactions llama.cpp prefills only
each new turn, as its own KV-reuse counter (``Step.evaluated_tokens``) shows.

``bench/long_runs.py --local`` is the full measurement (30 files of 1 KB in 4,096 tokens).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tao import Agent, RunConfig, Status
from tao.models.install import model_is_installed, runtime_is_installed
from tao.store.factory import open_store

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]
FILES = 8


def code_word(n: int) -> str:
    return f"{WORDS[n % len(WORDS)]}{n}"


@pytest.mark.local_model
@pytest.mark.timeout(3600)
@pytest.mark.skipif(
    not (runtime_is_installed() and model_is_installed()),
    reason="the embedded model is not installed (python -m tao.models.install)",
)
def test_the_embedded_model_reads_more_than_its_window_holds(tmp_path: Path) -> None:
    """8 files of ~600 characters with --context-window 2048: the run finishes, every file's
    whole observation is in the run log, it compacted, and on each step that compacted
    nothing the tokens llama.cpp evaluated are only the turn the prompt grew by (the
    KV cache kept the rest), never the whole prompt."""
    for n in range(1, FILES + 1):
        lines = " ".join(f"Line {i}: record {n}-{i} checked and filed." for i in range(1, 30))
        text = f"File {n:02d}. Its code word is {code_word(n)}. {lines}"
        (tmp_path / f"f{n:02d}.txt").write_text(text[:600])
    config = RunConfig(
        model="local",
        tools=("files",),
        project=str(tmp_path),
        context_window=2048,
        max_reply_tokens=256,
        max_steps=FILES + 6,
        max_seconds=3000.0,
        max_tokens=10**8,
    )
    names = ", ".join(f"f{n:02d}.txt" for n in range(1, FILES + 1))
    task = (
        f"Read these {FILES} files one at a time, in this order, with read_file: {names}. "
        f"Do not answer before all {FILES} are read. After reading f{FILES:02d}.txt, answer "
        "with its code word."
    )
    result = Agent(config=config).run(task)
    with open_store() as store:
        steps = store.get_run(result.run_id).steps
    done = [(s.index, s.kind.value, s.tool, s.arguments) for s in steps]
    assert result.status is Status.FINISHED, (result.error, result.stop_reason, done)
    observed = "\n".join(s.observation or "" for s in steps if s.tool == "read_file")
    for n in range(1, FILES + 1):  # each file whole in the record, compacted or not
        assert (tmp_path / f"f{n:02d}.txt").read_text() in observed, (f"f{n:02d}.txt", done)
    compacted = {c.step for s in steps for c in s.compactions}
    assert compacted, "a 2,048-token window never needed compaction"
    asked = [s for s in steps if s.call_index == 0 and s.evaluated_tokens is not None]
    assert max(s.input_tokens for s in asked) <= 2048 - 256
    flat = 0
    for before, step in itertools.pairwise(asked):
        assert step.evaluated_tokens is not None
        if step.index in compacted:
            assert step.evaluated_tokens <= step.input_tokens
            continue
        grew = step.input_tokens - before.input_tokens
        assert 0 < step.evaluated_tokens <= grew + 8, (step.index, step.evaluated_tokens, grew)
        flat += 1
    assert flat >= 3
