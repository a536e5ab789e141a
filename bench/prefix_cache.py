"""Seconds per question with the embedded model, before and after issue 16's speed-ups.

    python bench/prefix_cache.py                                  # react, 5 dev questions
    python bench/prefix_cache.py --strategy react --concurrency 2 -n 4
    python bench/prefix_cache.py --modes off,on,llama-ram -n 3    # + llama_cpp.LlamaRAMCache
    python bench/prefix_cache.py --modes off:paper,on -n 10       # before issue 16 vs the default

Every mode answers the same first ``-n`` HotpotQA dev questions with the same strategy,
one after another in this process, on one loaded model whose context is emptied before
each mode:

- ``off``: llama-cpp-python's own reuse of the live context's common prefix, and
  llama.cpp's grammar filter over the whole vocabulary for every token (tao before
  issue 16);
- ``states``: plus tao's :class:`tao.models.kvstates.StateCache`;
- ``on``: plus greedy decoding that asks the grammar about the chosen token only
  (:mod:`tao.models.sampling`): both are the default;
- ``llama-ram``: ``llama_cpp.LlamaRAMCache`` through ``Llama.set_cache`` instead of the
  state cache, with the lazy grammar.

A mode may name a prompt style after a colon (``off:paper``); without one it uses the
eval's default style (:data:`tao.eval.config.DEFAULT_PROMPT`), so ``off:paper,on`` is tao
before issue 16 against tao now.

``prefilled`` is the prompt tokens llama.cpp really evaluated (summed over calls);
``same answers`` compares each mode's answers with the first mode's (greedy decoding,
so they match when only the cache differs; another prompt style answers otherwise) and
``EM`` scores them. Timings depend on the machine's load: run the modes back to back.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tao.eval.config import DEFAULT_PROMPT, EVAL_RUN, EvalConfig
from tao.eval.data import load_questions
from tao.eval.executors import local_outcomes
from tao.eval.strategies import answer_question
from tao.models.base import ModelReply, ModelRequest, OnText
from tao.models.kvstates import StateCache
from tao.models.local import LocalModel

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"


@dataclass
class ModeResult:
    mode: str
    seconds: float
    questions: int
    calls: int
    prefilled: int
    prompt_tokens: int
    em: float
    answers: list[str | None]


class Counting:
    """The model, counting the prompt tokens each call really prefilled."""

    def __init__(self, model: LocalModel) -> None:
        self.inner = model
        self.name = model.name
        self.supports_stop = model.supports_stop
        self.supports_grammar = model.supports_grammar
        self.supports_tools = model.supports_tools
        self.calls = self.prefilled = self.prompt_tokens = 0

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        reply = self.inner.complete(request, on_text)
        self.calls += 1
        self.prefilled += reply.evaluated_tokens or 0
        self.prompt_tokens += reply.input_tokens
        return reply

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        return self.complete(request, on_text)


def run_mode(
    spec: str, model: LocalModel, config: EvalConfig, n: int, concurrency: int
) -> ModeResult:
    mode, _, style = spec.partition(":")
    config = dataclasses.replace(config, prompt=style or DEFAULT_PROMPT)
    loaded = model.loaded
    loaded.llama.reset()
    loaded.llama.set_cache(None)
    loaded.states = StateCache() if mode in ("states", "on") else None
    loaded.lazy_grammar = mode not in ("off", "states")
    if mode == "llama-ram":
        from llama_cpp.llama_cache import LlamaRAMCache

        loaded.llama.set_cache(LlamaRAMCache())
    questions = load_questions("hotpotqa", Path(config.questions))[:n]
    counting = Counting(model)
    started = time.monotonic()
    outcomes = local_outcomes(
        answer_question,
        config,
        questions,
        None,
        concurrency=concurrency,
        model=counting,
    )
    records = []
    for outcome in outcomes:
        records.append(outcome.record)
        done = time.monotonic() - started
        print(f"# {spec}: {len(records)} questions done at {done:.0f} s", file=sys.stderr)
    seconds = time.monotonic() - started
    records.sort(key=lambda r: r.index)
    return ModeResult(
        mode=f"{mode}:{config.prompt}",
        seconds=seconds,
        questions=len(records),
        calls=counting.calls,
        prefilled=counting.prefilled,
        prompt_tokens=counting.prompt_tokens,
        em=100.0 * sum(r.em for r in records) / max(1, len(records)),
        answers=[r.answer for r in records],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=5, help="dev questions (default 5)")
    parser.add_argument("--strategy", default="react")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--samples", type=int, default=3, help="CoT-SC samples (default 3)")
    parser.add_argument("--max-steps", type=int, default=7)
    parser.add_argument(
        "--modes",
        default="off,on",
        help="comma list of off, states, on, llama-ram, each with an optional :STYLE",
    )
    args = parser.parse_args(argv)
    prompts = DATA / "react_prompts"
    config = EvalConfig(
        benchmark="hotpotqa",
        strategy=args.strategy,
        prompts=str(prompts),
        questions=str(DATA / "hotpotqa" / "questions_dev.jsonl"),
        samples=args.samples,
        run=EVAL_RUN.replace(
            model="local", corpus=str(DATA / "hotpotqa" / "wiki.jsonl"), max_steps=args.max_steps
        ),
    )
    model = LocalModel()
    results: list[ModeResult] = []
    for mode in args.modes.split(","):
        results.append(run_mode(mode.strip(), model, config, args.n, args.concurrency))
        r = results[-1]
        print(f"# {r.mode}: {r.seconds:.1f} s, answers {r.answers}", file=sys.stderr, flush=True)
    first = results[0]
    print(
        f"strategy {args.strategy}, concurrency {args.concurrency}, {args.n} dev questions, "
        f"max_steps {args.max_steps}, samples {args.samples}"
    )
    print(
        "| cache | s/question | × first | model calls | prompt tokens | prefilled | EM "
        "| same answers |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        per_q = r.seconds / max(1, r.questions)
        speed = first.seconds / r.seconds if r.seconds else 0.0
        same = sum(a == b for a, b in zip(r.answers, first.answers, strict=True))
        print(
            f"| {r.mode} | {per_q:.1f} | {speed:.2f} | {r.calls} | {r.prompt_tokens} "
            f"| {r.prefilled} | {r.em:.0f} | {same}/{r.questions} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
