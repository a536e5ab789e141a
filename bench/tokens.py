"""Prompt tokens sent per solved HotpotQA dev question: tao versus the seeds' naive loop.

The naive loop is the one of the seed documents (``shared/seeds``): the whole transcript
is re-sent as ONE user message every step, under the same system prompt, and tool output
goes in uncut. tao sends the transcript as chat turns (system, task, then assistant /
observation pairs), cuts each observation to its tool's size (SPEC L6) and keeps the
system prompt byte-stable (no time, no task in it).

Two policies drive both loops with the same model and the same prompt:

- ``scripted`` (default, deterministic, every question): the same replies for both loops,
  built from the gold supporting titles (search, search, lookup, finish with the gold
  answer), so every question is solved and any difference is purely the framework's;
- ``local`` (``--model local``): the embedded GGUF model on a few questions, greedy; here
  the trajectories may differ, and ``evaluated`` counts the prompt tokens llama.cpp really
  processed after reusing its KV cache.

For every model call the prompt is rendered with the ChatML template (the embedded
Qwen2.5 model's) and counted with the embedded model's tokenizer when it is installed,
otherwise estimated at 4 characters a token (the table says which). ``cacheable`` is the
token prefix a call shares with the call before it (the previous step, or the last step of the
previous question): what a provider's prompt cache or a local KV cache can reuse instead
of processing again.

    python bench/tokens.py                       # 50 questions, scripted policy
    python bench/tokens.py --model local -n 3    # the embedded model on 3 questions instead
    python bench/tokens.py --quick --json        # CI smoke: 5 questions, estimated tokens
"""

from __future__ import annotations

import argparse
import json
import re
import string
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tao.agent import Agent
from tao.eval.sources import find_data
from tao.models.base import Message, ModelReply, ModelRequest
from tao.tools.wiki import WikiEnv, load_corpus

ROOT = Path(__file__).resolve().parent.parent
#: The HotpotQA files as ``tao eval`` finds them: $TAO_EVAL_DATA, the download, or the sample.
DATA = find_data().root / "hotpotqa"
MAX_STEPS = 7  # the paper's HotpotQA setting

Counter = Callable[[str], list[int]]


# --------------------------------------------------------------------------------------
# Token counting
# --------------------------------------------------------------------------------------


def chatml(messages: Sequence[Message]) -> str:
    """The prompt as the embedded model sees it (Qwen2.5's ChatML template)."""
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


def default_gguf() -> Path | None:
    """The embedded model's file, if this tao knows where it is installed."""
    try:
        from tao.models.install import default_model_path
    except ImportError:
        return None
    path = default_model_path()
    return path if path.exists() else None


def make_counter(kind: str, gguf: Path | None = None) -> tuple[Counter, str]:
    """``local``: the embedded model's tokenizer (vocabulary only); ``estimate``: 4 chars."""
    path = gguf or default_gguf()
    if kind == "local" and path is not None and path.exists():
        try:
            import llama_cpp
        except ImportError:
            pass
        else:
            llama = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)

            def count(text: str) -> list[int]:
                return list(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

            return count, f"tokenizer of {path.name}"
    # Estimated: one pseudo-token per 4 characters, so common prefixes stay comparable.
    return (lambda text: [hash(text[i : i + 4]) for i in range(0, len(text), 4)]), "estimate"


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


# --------------------------------------------------------------------------------------
# Models: a recorder around a scripted policy or the embedded model
# --------------------------------------------------------------------------------------


@dataclass
class Recorded:
    """Every prompt one loop sent for one question, and what the backend evaluated."""

    prompts: list[list[Message]] = field(default_factory=list)
    evaluated: list[int | None] = field(default_factory=list)


class Recording:
    """Wraps a model and keeps each call's messages (the loop's view, before the template)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.supports_stop = inner.supports_stop
        self.supports_grammar = inner.supports_grammar
        self.supports_tools = False
        self.log = Recorded()

    def complete(self, request: ModelRequest, on_text: Any = None) -> ModelReply:
        self.log.prompts.append([Message(**m) for m in request.messages])
        reply: ModelReply = self.inner.complete(request, on_text)
        self.log.evaluated.append(reply.evaluated_tokens)
        return reply


class Scripted:
    """Replies from a fixed list, in order; the same list drives both loops."""

    name = "scripted"
    supports_stop = False
    supports_grammar = False
    supports_tools = False

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.calls = replies, 0

    def complete(self, request: ModelRequest, on_text: Any = None) -> ModelReply:
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        return ModelReply(text=reply)


def gold_policy(question: dict[str, Any]) -> list[str]:
    """Search both supporting pages, look up the answer's first word, finish with the answer."""
    first, second = question["supporting_titles"][:2]
    word = (question["answer"].split() or ["it"])[0]
    return [
        f"Thought: I need to search {first} first.\nAction: search[{first}]",
        f"Thought: Now I need to search {second}.\nAction: search[{second}]",
        f"Thought: Let me check the page for {word}.\nAction: lookup[{word}]",
        f"Thought: I have what I need.\nAction: finish[{question['answer']}]",
    ]


# --------------------------------------------------------------------------------------
# The two loops
# --------------------------------------------------------------------------------------

ACTION = re.compile(r"Action: (\w+)\[(.*)\]")


def naive_react(
    task: str,
    system_prompt: str,
    model: Any,
    tools: dict[str, Callable[[str], str]],
    max_steps: int = MAX_STEPS,
) -> str | None:
    """The seeds' loop (shared/seeds/001): one growing user message, tool output uncut."""
    transcript = f"Task: {task}\n"
    for _ in range(max_steps):
        reply = model.complete(
            ModelRequest(
                messages=[
                    {"role": "system", "content": system_prompt},
                    {"role": "user", "content": transcript},
                ],
                stop=["Observation:"] if model.supports_stop else (),  # seeds/003 sends it too
                temperature=0.0,
                max_tokens=512,
            )
        )
        text = reply.text
        match = ACTION.search(text)
        if not match:
            return None
        transcript += text[: match.end()] + "\n"
        tool, arg = match.groups()
        if tool == "finish":
            return arg
        try:
            observation = tools[tool](arg) if tool in tools else f"Unknown tool: {tool}"
        except Exception as error:  # a failing tool becomes an observation, as in the seed
            observation = f"Error: {error}"
        transcript += f"Observation:\n{observation}\n"
    return None


def run_tao(question: dict[str, Any], model: Recording, corpus: Path) -> str | None:
    agent = Agent(model, ["wiki"], corpus=corpus, max_steps=MAX_STEPS, record=False)
    return agent.run(question["question"]).answer


def run_naive(question: dict[str, Any], model: Recording, corpus: Path, system: str) -> str | None:
    env = WikiEnv(load_corpus(corpus))
    return naive_react(
        question["question"], system, model, {"search": env.search, "lookup": env.lookup}
    )


def normalize(text: str) -> str:
    """HotpotQA answer normalisation: lower, no punctuation, no articles, folded spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


# --------------------------------------------------------------------------------------
# Accounting
# --------------------------------------------------------------------------------------


@dataclass
class Tally:
    questions: int = 0
    solved: int = 0
    calls: int = 0
    sent: int = 0
    cacheable: int = 0
    evaluated: int = 0
    evaluated_known: bool = True
    #: The previous prompt sent, across questions: a single-slot cache (llama.cpp's KV
    #: cache) reuses the stable system prompt from one question to the next.
    previous: list[int] = field(default_factory=list)

    def add(self, log: Recorded, count: Counter, solved: bool) -> None:
        self.questions += 1
        self.solved += solved
        for messages, evaluated in zip(log.prompts, log.evaluated, strict=True):
            tokens = count(chatml(messages))
            self.calls += 1
            self.sent += len(tokens)
            self.cacheable += common_prefix(self.previous, tokens)
            self.previous = tokens
            if evaluated is None:
                self.evaluated_known = False
            else:
                self.evaluated += evaluated

    def row(self, per: str) -> dict[str, Any]:
        """Totals divided by the solved questions (``per="solved"``) or by all of them."""
        divisor = self.solved if per == "solved" else self.questions
        scale = 1 / divisor if divisor else float("nan")
        return {
            "questions": self.questions,
            "solved": self.solved,
            "calls": self.calls,
            "per": per,
            "sent": self.sent * scale,
            "cacheable": self.cacheable * scale,
            "uncached": (self.sent - self.cacheable) * scale,
            "cacheable_share": self.cacheable / self.sent if self.sent else 0.0,
            "evaluated": self.evaluated * scale if self.evaluated_known else None,
        }


def compare(
    questions: list[dict[str, Any]],
    corpus: Path,
    count: Counter,
    make_model: Callable[[dict[str, Any]], Any],
    progress: str,
    per: str = "solved",
) -> dict[str, dict[str, Any]]:
    tallies = {"tao": Tally(), "naive": Tally()}
    for i, question in enumerate(questions, 1):
        print(f"{progress} {i}/{len(questions)}", file=sys.stderr)
        gold = normalize(question["answer"])
        tao_model = Recording(make_model(question))
        answer = run_tao(question, tao_model, corpus)
        tallies["tao"].add(tao_model.log, count, normalize(answer or "") == gold)
        system = Agent(tao_model, ["wiki"], corpus=corpus, record=False).system_prompt
        naive_model = Recording(make_model(question))
        answer = run_naive(question, naive_model, corpus, system)
        tallies["naive"].add(naive_model.log, count, normalize(answer or "") == gold)
    return {name: tally.row(per) for name, tally in tallies.items()}


def print_table(title: str, rows: dict[str, dict[str, Any]]) -> None:
    per = next(iter(rows.values()))["per"]
    print(f"\n{title}")
    print(
        f"| loop | questions | solved | model calls | tokens sent / {per} | "
        f"cacheable prefix / {per} | not cacheable / {per} | evaluated / {per} |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, row in rows.items():
        evaluated = row["evaluated"]
        print(
            f"| {name} | {row['questions']} | {row['solved']} | {row['calls']} | "
            f"{row['sent']:,.0f} | {row['cacheable']:,.0f} "
            f"({row['cacheable_share']:.0%}) | {row['uncached']:,.0f} | "
            f"{'n/a' if evaluated is None else f'{evaluated:,.0f}'} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 questions, estimated tokens")
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of the HotpotQA files")
    parser.add_argument("--questions", type=int, default=None, help="scripted: how many")
    parser.add_argument(
        "--model",
        choices=["scripted", "local"],
        default="scripted",
        help="scripted: the gold policy; local: the embedded model instead",
    )
    parser.add_argument("-n", "--local-questions", type=int, default=3)
    parser.add_argument("--tokenizer", choices=["local", "estimate"], default=None)
    parser.add_argument(
        "--tokenizer-model", type=Path, default=None, help="GGUF whose tokenizer counts"
    )
    args = parser.parse_args(argv)
    corpus = args.data / "wiki.jsonl"
    lines = (args.data / "questions_dev.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines if line.strip()]
    count, counted_by = make_counter(
        args.tokenizer or ("estimate" if args.quick else "local"), args.tokenizer_model
    )
    scripted_n = args.questions or (5 if args.quick else 50)

    summary: dict[str, Any] = {"tokenizer": counted_by}
    if args.model == "scripted":
        rows = compare(
            questions[:scripted_n],
            corpus,
            count,
            lambda q: Scripted(gold_policy(q)),
            "scripted",
        )
        print_table(
            f"Scripted gold policy, {scripted_n} HotpotQA dev questions, tokens: {counted_by}",
            rows,
        )
        summary["questions"] = scripted_n
        for name, row in rows.items():
            summary[f"{name}_solved"] = row["solved"]
            for key in ("sent", "cacheable", "uncached"):
                summary[f"{name}_{key}_per_solved"] = round(row[key], 1)
        summary["tao_over_naive_sent"] = round(rows["tao"]["sent"] / rows["naive"]["sent"], 3)

    if args.model == "local":
        from tao.models.local import LocalModel

        local = LocalModel()
        local_rows = compare(
            questions[: args.local_questions],
            corpus,
            count,
            lambda _: local,
            "local",
            per="question",
        )
        print_table(
            f"Embedded model, first {args.local_questions} HotpotQA dev questions, greedy, "
            f"tokens: {counted_by}",
            local_rows,
        )
        for name, row in local_rows.items():
            summary[f"local_{name}_solved"] = row["solved"]
            summary[f"local_{name}_calls"] = row["calls"]
            for key in ("sent", "cacheable", "evaluated"):
                value = row[key]
                summary[f"local_{name}_{key}_per_question"] = (
                    None if value is None else round(value, 1)
                )
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
