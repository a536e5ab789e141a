"""Benchmark of the embedded model (issue 3): KV-cache reuse, grammar, format adherence.

    python bench/local_model.py            # 30 episodes: 10 calculator + 20 HotpotQA dev
    python bench/local_model.py --quick    # 4 episodes, a smoke run
    python bench/local_model.py --json     # ... and a JSON summary as the last line

Three measurements over the same episodes, all with the public ``tao.Agent`` API
and the embedded model at temperature 0:

1. **Cached run** (grammar on): each episode runs as usual; one llama.cpp
   context is reused, so each step prefills only the new tokens.
   ``prefill_ratio`` = tokens the model processed over the run (prompt tokens
   actually evaluated + generated tokens) / tokens of the final transcript
   (final prompt + final reply); 1.0 means every token was processed once.
   ``format_adherence`` = fraction of model replies that parsed.
2. **Naive baseline** on the longest episodes: every step's exact input
   (``Step.model_input``) is re-sent to an empty context (``reuse_cache=False``)
   with the same grammar, and, right before, the same inputs are replayed on one
   context that starts empty (cache reuse, first step cold). ``speedup_vs_naive``
   = episode wall time with naive model calls / with cache reuse (tool time
   included in both); timing both back to back keeps machine load comparable.
3. **Grammar off**: every step's exact input is answered again without the
   grammar, and ``format_adherence_no_grammar`` is the fraction of those
   replies the text protocol parses (same contexts, so only the grammar differs).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import string
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tao.models.base import Message, ModelRequest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "hotpotqa"

#: Ten calculator tasks with their exact answers.
CALC_TASKS: list[tuple[str, float]] = [
    ("What is 17 * 23 + 4?", 395),
    ("What is (125 - 37) * 4?", 352),
    ("What is 3456 / 12 + 7?", 295),
    ("What is 999 * 3 - 1?", 2996),
    ("What is 81 / 9 * 7?", 63),
    ("What is 12 * 12 * 12?", 1728),
    ("What is (45 + 55) * (10 - 3)?", 700),
    ("What is 0.15 * 240?", 36),
    ("What is the square root of 1764, plus 8?", 50),
    ("A box holds 24 eggs. How many eggs are in 37 boxes?", 888),
]


@dataclass
class Episode:
    kind: str  # "calc" or "hotpot"
    task: str
    gold: str
    steps: list[Any] = field(default_factory=list)
    status: str = ""
    answer: str | None = None
    duration_s: float = 0.0
    naive_model_s: float | None = None
    cached_replay_s: float | None = None
    no_grammar_parsed: int = 0
    no_grammar_replies: int = 0

    @property
    def model_s(self) -> float:
        return float(sum(s.model_duration_s for s in self.steps))

    @property
    def processed(self) -> int:
        return sum((s.evaluated_tokens or 0) + s.output_tokens for s in self.steps)

    @property
    def prompt_evaluated(self) -> int:
        return sum(s.evaluated_tokens or 0 for s in self.steps)

    @property
    def transcript(self) -> int:
        last = self.steps[-1] if self.steps else None
        return last.input_tokens + last.output_tokens if last else 0

    @property
    def parsed(self) -> int:
        return sum(1 for s in self.steps if s.kind not in ("parse_error", "model_error"))

    @property
    def correct(self) -> bool:
        if self.answer is None:
            return False
        if self.kind == "calc":
            numbers = re.findall(r"-?\d+(?:\.\d+)?", self.answer.replace(",", ""))
            return any(math.isclose(float(n), float(self.gold), abs_tol=1e-6) for n in numbers)
        return normalize_answer(self.answer) == normalize_answer(self.gold)


def normalize_answer(text: str) -> str:
    """HotpotQA's exact-match normalisation: case, punctuation, articles, spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def load_episodes(n_calc: int, n_hotpot: int) -> list[Episode]:
    """Calculator and HotpotQA episodes, interleaved so a time budget cuts both evenly."""
    calc = [Episode("calc", task, str(gold)) for task, gold in CALC_TASKS[:n_calc]]
    hotpot: list[Episode] = []
    with (DATA / "questions_dev.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if len(hotpot) >= n_hotpot:
                break
            row = json.loads(line)
            hotpot.append(Episode("hotpot", row["question"], row["answer"]))
    episodes: list[Episode] = []
    while calc or hotpot:
        share = max(1, round(len(hotpot) / max(1, len(calc)))) if calc else len(hotpot)
        episodes += hotpot[:share]
        del hotpot[:share]
        if calc:
            episodes.append(calc.pop(0))
    return episodes


def speed_probe(model: Any) -> dict[str, float]:
    """Prefill and decode rates of this machine, from two plain completions."""
    words = " ".join(f"word{i}" for i in range(100))
    prompt: list[Message] = [{"role": "user", "content": f"Repeat nothing. {words}"}]
    model.reuse_cache = False
    started = time.perf_counter()
    first = model.complete(ModelRequest(messages=prompt, max_tokens=1))
    prefill_s = time.perf_counter() - started
    model.reuse_cache = True
    story: list[Message] = [
        {"role": "user", "content": "Write a long story about a lighthouse keeper."}
    ]
    model.complete(ModelRequest(messages=story, max_tokens=1))  # prefill the short prompt first
    started = time.perf_counter()
    reply = model.complete(ModelRequest(messages=story, max_tokens=64))
    decode_s = time.perf_counter() - started
    return {
        "prefill_tok_s": round((first.evaluated_tokens or 0) / prefill_s, 1),
        "decode_tok_s": round(reply.output_tokens / decode_s, 1),
    }


def paper_prompt() -> str:
    """The ReAct paper's HotpotQA instruction + 6 ``webthink`` examples (~2.4k tokens)."""
    from tao.eval.prompts import find_prompts_dir, load_prompts

    folder = find_prompts_dir(DATA / "questions_dev.jsonl")
    return load_prompts(folder, "hotpotqa").system("react")


def run_cached(
    episodes: list[Episode],
    model: Any,
    max_steps: int,
    log: Any,
    deadline: float,
    system_prompt: str | None = None,
) -> list[Episode]:
    from tao import Agent

    calc_agent = Agent(model, ["calc"], max_steps=max_steps, grammar=True, record=False)
    wiki_agent = Agent(
        model,
        ["wiki"],
        corpus=DATA / "wiki.jsonl",
        max_steps=max_steps,
        grammar=True,
        record=False,
        system_prompt=system_prompt,
    )
    done: list[Episode] = []
    for number, episode in enumerate(episodes, start=1):
        if time.monotonic() > deadline:
            log(f"time budget spent: {len(done)} of {len(episodes)} episodes ran")
            break
        agent = calc_agent if episode.kind == "calc" else wiki_agent
        result = agent.run(episode.task)
        episode.steps = list(result.steps)
        episode.status = str(result.status)
        episode.answer = result.answer
        episode.duration_s = result.duration_s
        log(
            f"[{number}/{len(episodes)}] {episode.kind} {len(episode.steps)} steps "
            f"{episode.status} {'ok ' if episode.correct else 'bad'} {episode.duration_s:.1f} s "
            f"answer={episode.answer!r} gold={episode.gold!r}"
        )
        done.append(episode)
    return done


def run_naive(episodes: list[Episode], naive: Any, cached: Any, log: Any, deadline: float) -> None:
    """Time each episode's model calls twice, back to back under the same machine load.

    Cached: the steps' exact inputs in order on one context, starting empty (so
    the first step pays the full prefill). Naive: every step on an empty context.
    """
    from tao.protocol.grammar import react_grammar
    from tao.protocol.labels import get_labels

    labels = get_labels("en")
    tools = {"calc": ["calculator"], "hotpot": ["search", "lookup"]}
    for episode in episodes:
        if time.monotonic() > deadline:
            break
        grammar = react_grammar(labels, [*tools[episode.kind], "finish"])
        timings = []
        for model in (cached, naive):
            model.loaded.llama.reset()
            spent = 0.0
            for step in episode.steps:
                started = time.perf_counter()
                model.complete(
                    ModelRequest(
                        messages=step.model_input, stop=labels.stop, max_tokens=512, grammar=grammar
                    )
                )
                spent += time.perf_counter() - started
            timings.append(spent)
        episode.cached_replay_s, episode.naive_model_s = timings
        log(
            f"naive: {len(episode.steps)} steps {timings[1]:.1f} s "
            f"vs cached {timings[0]:.1f} s (in the run: {episode.model_s:.1f} s)"
        )


def run_no_grammar(episodes: list[Episode], model: Any, log: Any, deadline: float) -> None:
    from tao.protocol.labels import get_labels
    from tao.protocol.text import Action, FinalAnswer, cut_at_stop, parse_reply

    labels = get_labels("en")
    for number, episode in enumerate(episodes, start=1):
        if time.monotonic() > deadline:
            break
        for step in episode.steps:
            reply = model.complete(
                ModelRequest(messages=step.model_input, stop=labels.stop, max_tokens=512)
            )
            parsed = parse_reply(cut_at_stop(reply.text, labels.stop), labels)
            episode.no_grammar_replies += 1
            episode.no_grammar_parsed += isinstance(parsed, Action | FinalAnswer)
        log(
            f"[{number}/{len(episodes)}] no grammar: "
            f"{episode.no_grammar_parsed}/{episode.no_grammar_replies} parsed"
        )


def ratio(numerator: float, denominator: float) -> float | None:
    return round(numerator / denominator, 3) if denominator else None


def summarize(
    episodes: list[Episode], probe: dict[str, float], setup_s: float, paper: bool = False
) -> dict[str, Any]:
    naive = [e for e in episodes if e.naive_model_s is not None]
    tools_s = [e.duration_s - e.model_s for e in naive]
    naive_wall = sum(t + (e.naive_model_s or 0.0) for t, e in zip(tools_s, naive, strict=True))
    cached_wall = sum(t + (e.cached_replay_s or 0.0) for t, e in zip(tools_s, naive, strict=True))
    replies = sum(len(e.steps) for e in episodes)
    summary: dict[str, Any] = {
        "episodes": len(episodes),
        "model": "local",
        "hotpot_prompt": "paper 6-shot" if paper else "tao zero-shot",
        "prefill_ratio": ratio(
            sum(e.processed for e in episodes), sum(e.transcript for e in episodes)
        ),
        "prompt_prefill_ratio": ratio(
            sum(e.prompt_evaluated for e in episodes),
            sum(e.steps[-1].input_tokens for e in episodes if e.steps),
        ),
        "speedup_vs_naive": ratio(naive_wall, cached_wall),
        "naive_episodes": len(naive),
        "naive_wall_s": round(naive_wall, 1),
        "cached_replay_wall_s": round(cached_wall, 1),
        "naive_mean_steps": round(statistics.mean(len(e.steps) for e in naive), 2) if naive else 0,
        "format_adherence": ratio(sum(e.parsed for e in episodes), replies),
        "format_adherence_no_grammar": ratio(
            sum(e.no_grammar_parsed for e in episodes),
            sum(e.no_grammar_replies for e in episodes),
        ),
        "finished": sum(e.status == "finished" for e in episodes),
        "calc_accuracy": ratio(
            sum(e.correct for e in episodes if e.kind == "calc"),
            sum(e.kind == "calc" for e in episodes),
        ),
        "hotpot_em": ratio(
            sum(e.correct for e in episodes if e.kind == "hotpot"),
            sum(e.kind == "hotpot" for e in episodes),
        ),
        "mean_steps": round(statistics.mean(len(e.steps) for e in episodes), 2),
        "cached_wall_s": round(sum(e.duration_s for e in episodes), 1),
        "model_load_s": round(setup_s, 2),
        **probe,
    }
    return summary


def print_table(episodes: list[Episode], summary: dict[str, Any]) -> None:
    header = (
        f"{'#':>3} {'kind':6} {'steps':>5} {'status':10} {'ok':3} {'eval':>6} {'trans':>6} "
        f"{'ratio':>6} {'wall s':>7} {'naive s':>8} {'no-gram':>8}  answer"
    )
    print(header)
    print("-" * len(header))
    for number, e in enumerate(episodes, start=1):
        naive = f"{e.duration_s - e.model_s + e.naive_model_s:8.1f}" if e.naive_model_s else " " * 8
        nog = f"{e.no_grammar_parsed}/{e.no_grammar_replies}" if e.no_grammar_replies else ""
        answer = (e.answer or "")[:30]
        print(
            f"{number:>3} {e.kind:6} {len(e.steps):>5} {e.status:10} "
            f"{'yes' if e.correct else 'no':3} "
            f"{e.processed:>6} {e.transcript:>6} {ratio(e.processed, e.transcript)!s:>6} "
            f"{e.duration_s:>7.1f} {naive} {nog:>8}  {answer}"
        )
    print("-" * len(header))
    for key, value in summary.items():
        print(f"{key:28} {value}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 calculator + 2 HotpotQA episodes")
    parser.add_argument("--calc", type=int, default=10, help="calculator episodes (max 10)")
    parser.add_argument("--hotpot", type=int, default=20, help="HotpotQA dev episodes")
    parser.add_argument("--max-steps", type=int, default=7, help="step limit (the paper's 7)")
    parser.add_argument(
        "--naive", type=int, default=4, help="longest episodes re-run naively (0: skip)"
    )
    parser.add_argument(
        "--no-grammar-pass",
        dest="no_grammar",
        action="store_false",
        help="skip the grammar-off replay",
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=float("inf"),
        help="wall-time budget: 60%% for the cached runs, 20%% naive, 20%% grammar off",
    )
    parser.add_argument(
        "--paper-prompt",
        action="store_true",
        help="HotpotQA episodes use the paper's 6-shot prompt instead of tao's zero-shot one",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON summary as the last line")
    args = parser.parse_args(argv)
    if args.quick:
        args.calc, args.hotpot, args.naive = 2, 2, 1

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    from tao.models.local import LocalModel

    started = time.perf_counter()
    model = LocalModel()
    setup_s = time.perf_counter() - started
    probe = speed_probe(model)
    log(f"model loaded in {setup_s:.1f} s; {probe}")

    begin, budget = time.monotonic(), args.budget_s
    episodes = load_episodes(args.calc, args.hotpot)
    system_prompt = paper_prompt() if args.paper_prompt else None
    episodes = run_cached(episodes, model, args.max_steps, log, begin + 0.6 * budget, system_prompt)
    if args.naive:
        longest = sorted(episodes, key=lambda e: len(e.steps), reverse=True)[: args.naive]
        run_naive(longest, LocalModel(reuse_cache=False), model, log, begin + 0.8 * budget)
    if args.no_grammar:
        run_no_grammar(episodes, model, log, begin + budget)

    summary = summarize(episodes, probe, setup_s, args.paper_prompt)
    print_table(episodes, summary)
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
