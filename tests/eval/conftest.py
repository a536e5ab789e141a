"""Fixtures for the eval tests: a tiny corpus, tiny prompts, tiny question files, and a
real HTTP model server on 127.0.0.1 that answers by question text (so results do not
depend on the order in which concurrent questions reach it)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.http import FakeServer, Reply, Request, chat_completion

from tao.eval.config import DEFAULT_PROMPT, DEFAULT_SAMPLES, EVAL_RUN, EvalConfig
from tao.eval.data import Benchmark

PAGES = [
    {
        "title": "Scott Derrickson",
        "text": "Scott Derrickson is an American director. He lives in Los Angeles.",
    },
    {
        "title": "Ed Wood",
        "text": "Edward Davis Wood Jr. was an American filmmaker. He was born in 1924.",
    },
    {
        "title": "Milhouse",
        "text": "Milhouse is a character. Milhouse was named after Richard Nixon.",
    },
    {"title": "Gal Gadot", "text": "Gal Gadot is an Israeli actress and model."},
]

#: Each prompt carries a marker so the test server knows which strategy is asking.
HOTPOT_PROMPTS = {
    "webthink_simple6": (
        "[REACT]\nQuestion: Q?\nThought 1: t\nAction 1: Search[X]\nObservation 1: o\n"
        "Thought 2: t\nAction 2: Finish[A]\n"
    ),
    "webact_simple6": "[ACT]\nQuestion: Q?\nAction 1: Search[X]\nObservation 1: o\n",
    "cotqa_simple6": "[COT]\nQuestion: Q?\nThought: So the answer is A.\nAnswer: A\n",
    "webqa_simple6": "[STANDARD]\nQuestion: Q?\nAnswer: A\n",
}
FEVER_PROMPTS = {
    "webthink_simple3": (
        "[REACT]\nDetermine if SUPPORTS or REFUTES.\nClaim: C\nThought 1: t\n"
        "Action 1: Finish[SUPPORTS]\n"
    ),
    "webact_simple3": "[ACT]\nClaim: C\nAction 1: Finish[SUPPORTS]\n",
    "cotqa_simple3": "[COT]\nClaim: C\nThought: t\nAnswer: SUPPORTS\n",
    "webqa_simple3": "[STANDARD]\nClaim: C\nAnswer: SUPPORTS\n",
}
INSTRUCTION = (
    "Solve a question answering task with interleaving Thought, Action, Observation steps. "
    "Thought can reason about the current situation, and Action can be three types:\n"
)

QUESTIONS = [
    {
        "_id": "q0",
        "question": "Were Scott Derrickson and Ed Wood of the same nationality?",
        "answer": "yes",
    },
    {"_id": "q1", "question": "Who was Milhouse named after?", "answer": "Richard Nixon"},
    {"_id": "q2", "question": "When was Ed Wood born?", "answer": "1924"},
    {"_id": "q3", "question": "Where does Scott Derrickson live?", "answer": "Los Angeles"},
]
CLAIMS = [
    {"id": 1, "claim": "Gal Gadot is an actress.", "label": "SUPPORTS"},
    {"id": 2, "claim": "Gal Gadot is a chef.", "label": "REFUTES"},
]


@dataclass
class EvalData:
    root: Path
    corpus: Path
    prompts: Path
    questions: Path
    claims: Path

    def config(
        self,
        strategy: str,
        model: str = "replay:x",
        *,
        benchmark: Benchmark = "hotpotqa",
        samples: int = DEFAULT_SAMPLES,
        prompt: str = DEFAULT_PROMPT,
        **run: object,
    ) -> EvalConfig:
        """An eval of these files; ``run`` are the agents' settings (max_steps, base_url…)."""
        return EvalConfig(
            benchmark=benchmark,
            strategy=strategy,
            prompts=str(self.prompts),
            questions=str(self.questions if benchmark == "hotpotqa" else self.claims),
            samples=samples,
            prompt=prompt,
            run=EVAL_RUN.replace(model=model, corpus=str(self.corpus), **run),
        )


@pytest.fixture
def eval_data(tmp_path: Path) -> EvalData:
    root = tmp_path / "data"
    (root / "hotpotqa").mkdir(parents=True)
    (root / "fever").mkdir()
    prompts = root / "react_prompts"
    prompts.mkdir()
    corpus = root / "hotpotqa" / "wiki.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PAGES), encoding="utf-8")
    (prompts / "prompts_naive.json").write_text(json.dumps(HOTPOT_PROMPTS), encoding="utf-8")
    (prompts / "fever.json").write_text(json.dumps(FEVER_PROMPTS), encoding="utf-8")
    (prompts / "hotpotqa_instruction.txt").write_text(INSTRUCTION, encoding="utf-8")
    questions = root / "hotpotqa" / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    claims = root / "fever" / "claims.json"
    claims.write_text(json.dumps(CLAIMS, indent=1), encoding="utf-8")
    return EvalData(root, corpus, prompts, questions, claims)


@dataclass
class Ask:
    """What the server saw in one request."""

    kind: str  # REACT, ACT, COT, STANDARD
    question: str
    step: int  # 1 + the number of assistant turns so far
    temperature: float
    messages: list[dict[str, Any]]


@dataclass
class OracleServer:
    """Answers chat completions with ``respond(Ask)``; keeps every Ask it got."""

    base_url: str
    respond: Callable[[Ask], str]
    asks: list[Ask] = field(default_factory=list)
    delay: float = 0.0


def _ask(body: dict[str, Any]) -> Ask:
    messages = body.get("messages", [])
    system = str(messages[0].get("content", "")) if messages else ""
    kind = re.search(r"\[(REACT|ACT|COT|STANDARD)\]", system)
    first_user = next((m for m in messages if m.get("role") == "user"), {"content": ""})
    question = re.sub(r"^(Question|Claim):\s*", "", str(first_user.get("content", "")))
    step = 1 + sum(1 for m in messages if m.get("role") == "assistant")
    return Ask(
        kind.group(1) if kind else "?", question, step, body.get("temperature", 0.0), messages
    )


@pytest.fixture
def oracle() -> Iterator[Callable[[Callable[[Ask], str]], OracleServer]]:
    servers: list[FakeServer] = []

    def start(respond: Callable[[Ask], str], delay: float = 0.0) -> OracleServer:
        state = OracleServer("", respond, delay=delay)
        lock = threading.Lock()

        def answer(request: Request) -> Reply:
            ask = _ask(request.body)
            with lock:
                state.asks.append(ask)
            if state.delay:
                time.sleep(state.delay)
            return Reply.json(chat_completion(state.respond(ask), request.body))

        server = FakeServer(answer, prefix="/v1").start()
        servers.append(server)
        state.base_url = server.base_url
        return state

    yield start
    for server in servers:
        server.stop()


def scripted(ask: Ask) -> str:
    """A deterministic 'model': right on q0, q1 and the claims, wrong on q2, no answer on q3."""
    q = ask.question
    if ask.kind == "STANDARD":
        return {"Who was Milhouse named after?": "Answer: Richard Nixon"}.get(q, "Answer: no idea")
    if ask.kind == "COT":
        if "Gal Gadot" in q:
            return (
                "Thought: a chef? no.\nAnswer: REFUTES"
                if "chef" in q
                else "Thought: yes.\nAnswer: SUPPORTS"
            )
        if "nationality" in q:
            return "Thought: Both are American. So the answer is yes.\nAnswer: yes\nQuestion: next?"
        return "Thought: I am not sure.\nAnswer: 1930"
    if "Gal Gadot" in q:
        label = "REFUTES" if "chef" in q else "SUPPORTS"
        return f"Thought {ask.step}: I know.\nAction {ask.step}: Finish[{label}]"
    plans = {
        "Were Scott Derrickson and Ed Wood of the same nationality?": [
            "Search[Scott Derrickson]",
            "Search[Ed Wood]",
            "Finish[yes]",
        ],
        "Who was Milhouse named after?": [
            "Search[Milhouse]",
            "Lookup[named after]",
            "Finish[Richard Nixon]",
        ],
        "When was Ed Wood born?": ["Search[Ed Wood]", "Finish[1925]"],
    }
    plan = plans.get(q, ["Search[Nowhere]"] * 20)
    action = plan[min(ask.step, len(plan)) - 1]
    thought = "" if ask.kind == "ACT" else f"Thought {ask.step}: next.\n"
    return f"{thought}Action {ask.step}: {action}\nObservation {ask.step}: invented"
