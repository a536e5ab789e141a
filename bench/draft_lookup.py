"""Would prompt-lookup decoding make the embedded model's ReAct faster on this machine?

    TAO_HOME=... python bench/draft_lookup.py               # the run log's last 25 ReAct runs
    python bench/draft_lookup.py --runs 50 --drafts 1,2,3,5 --threads 2

Prompt-lookup decoding (``llama_cpp.llama_speculative.LlamaPromptLookupDecoding``) guesses
the next tokens by finding the last tokens earlier in the context, and checks the guess in
one batch: every guessed token that matches what greedy decoding would choose is a token
not decoded alone. ReAct copies a lot (entity names from the question and observations,
the few-shot format), so many guesses are right. Whether that pays depends on what a batch
of ``1 + k`` tokens with logits for each costs next to one token, which depends on the CPU.

This script answers both halves, without changing tao:

1. *tokens per pass*: it replays the model's real replies of stored ReAct runs (each step's
   prompt as llama.cpp saw it, then its reply), guessing as prompt lookup would (2-grams, up
   to ``k`` tokens) and counting how many decode passes the reply would have taken;
2. *ms per pass*: it times ``llama_decode`` of ``1 + k`` tokens with logits for each, at a
   context of 1,800 tokens, on the embedded model;

and prints ms per generated token for each ``k`` (``k = 0`` is plain decoding).
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from tao.models.install import default_model_path
from tao.models.local import LoadedLlama
from tao.paths import tao_home
from tao.store.factory import open_store


def guess(context: Sequence[int], k: int, ngram: int = 2) -> list[int]:
    """``LlamaPromptLookupDecoding``'s guess: what followed the first earlier occurrence of
    the context's last ``ngram`` (then fewer) tokens."""
    for size in range(min(ngram, len(context) - 1), 0, -1):
        tail = list(context[-size:])
        for start in range(len(context) - size):
            if list(context[start : start + size]) == tail:
                follow = list(context[start + size : start + size + k])
                if follow:
                    return follow
    return []


def passes(prompt: list[int], reply: list[int], k: int) -> int:
    """Decode passes greedy decoding takes for ``reply`` when each pass checks a guess of
    up to ``k`` tokens (a pass yields the guessed tokens that match, plus one)."""
    done = count = 0
    while done < len(reply):
        drafted = guess((prompt + reply[:done])[-3000:], k) if k else []
        kept = 0
        while kept < len(drafted) and done + kept < len(reply):
            if drafted[kept] != reply[done + kept]:
                break
            kept += 1
        done, count = done + kept + 1, count + 1
    return count


def replies(home: Path, runs: int, loaded: LoadedLlama) -> list[tuple[list[int], list[int]]]:
    """Each step's prompt tokens and reply tokens, from the last ``runs`` ReAct eval runs."""
    database = sqlite3.connect(home / "tao.db")
    ids = database.execute(
        "SELECT id FROM runs WHERE json_extract(config, '$.tools') = '[\"wiki\"]' "
        "AND json_extract(config, '$.temperature') = 0 ORDER BY started_at DESC LIMIT ?",
        (runs,),
    ).fetchall()
    store, pairs = open_store(), []
    for (run_id,) in ids:
        for step in store.get_run(run_id).steps:
            prompt = loaded.prompt_tokens(step.model_input) if step.model_input else None
            if prompt and step.model_output:
                reply = loaded.llama.tokenize(step.model_output.encode(), add_bos=False)
                pairs.append((prompt, reply))
    return pairs


def ms_per_pass(llama: object, sizes: Sequence[int], rounds: int = 6) -> dict[int, float]:
    """Median-ish (second best of ``rounds``) ms to decode ``n`` tokens with logits for each."""
    from typing import Any

    model: Any = llama
    text = "Thought 1: I need to search Colorado orogeny, find the area. " * 200
    context = model.tokenize(text.encode())[:1800]
    model.eval(context)
    base, timings = model.n_tokens, {}
    for size in sizes:
        seen = []
        for _ in range(rounds):
            model._ctx.kv_cache_seq_rm(-1, base, -1)
            model._batch.set_batch(batch=context[100 : 100 + size], n_past=base, logits_all=True)
            start = time.perf_counter()
            model._ctx.decode(model._batch)
            seen.append(time.perf_counter() - start)
        timings[size] = sorted(seen)[1] * 1000
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=25, help="stored ReAct runs to replay")
    parser.add_argument("--drafts", default="1,2,3,5,8", help="guess lengths k to try")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import llama_cpp

    path = default_model_path()
    llama = llama_cpp.Llama(
        model_path=str(path), n_ctx=4096, n_batch=512, n_threads=args.threads,
        n_threads_batch=args.threads, verbose=False,
    )  # fmt: skip
    loaded = LoadedLlama(llama=llama, path=path, n_ctx=4096, n_threads=args.threads)
    pairs = replies(tao_home(), args.runs, loaded)
    if not pairs:
        raise SystemExit(f"no stored ReAct eval runs in {tao_home()}: run tao eval hotpotqa first")
    drafts = [0, *(int(k) for k in args.drafts.split(","))]
    cost = ms_per_pass(llama, sorted({k + 1 for k in drafts}))
    tokens = sum(len(reply) for _, reply in pairs)
    print(f"{len(pairs)} replies, {tokens} generated tokens, {args.threads} threads\n")
    print("| guess k | tokens / pass | ms / pass (1+k tokens) | ms / token | × plain |")
    print("|---:|---:|---:|---:|---:|")
    for k in drafts:
        count = sum(passes(prompt, reply, k) for prompt, reply in pairs)
        per_token = cost[k + 1] * count / tokens
        print(
            f"| {k} | {tokens / count:.2f} | {cost[k + 1]:.1f} | {per_token:.1f} "
            f"| {cost[1] / per_token:.2f} |"
        )


if __name__ == "__main__":
    main()
