"""One path per backend, the other derived (tao.models.bridge), against a real HTTP server.

Network backends write ``acomplete``; ``complete`` runs it on a private per-thread loop,
so sync callers reuse one client and its connections. CPU-bound backends write
``complete``; ``acomplete`` runs it in a worker thread and hands text back to the loop.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import openai
import pytest
from tests.fakes.http import FakeServer, Reply, Request, chat_completion

from tao.errors import ModelError
from tao.models import ModelRequest
from tao.models.openai import OpenAIModel
from tao.models.replay import ReplayModel

HI = ModelRequest(messages=[{"role": "user", "content": "hi"}])


def echo(request: Request) -> Reply:
    """Answers with the last message's content, after a short wait (a model's latency)."""
    return Reply.json(
        chat_completion(f"echo: {request.body['messages'][-1]['content']}", request.body),
        delay_s=0.2,
    )


def test_sync_calls_in_one_thread_reuse_one_connection() -> None:
    with FakeServer(echo, prefix="/v1") as server:
        model = OpenAIModel("m", base_url=server.base_url)
        assert model.complete(HI).text == "echo: hi"
        assert model.complete(HI).text == "echo: hi"
    first, second = server.requests
    assert first.port == second.port  # one loop, one client, one kept-alive connection


def test_worker_threads_run_their_calls_at_the_same_time() -> None:
    results: dict[int, list[str]] = {}
    with FakeServer(echo, prefix="/v1") as server:
        model = OpenAIModel("m", base_url=server.base_url)

        def work(n: int) -> None:
            asks = [
                ModelRequest(messages=[{"role": "user", "content": f"{n}.{i}"}]) for i in (1, 2)
            ]
            results[n] = [model.complete(ask).text for ask in asks]

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - began
    assert results == {n: [f"echo: {n}.1", f"echo: {n}.2"] for n in range(8)}
    assert wall < 8 * 2 * 0.2 / 2  # 16 calls of 0.2 s; serialised they would take 3.2 s
    assert len({r.port for r in server.requests}) == 8  # a client per thread, reused


def test_sync_call_from_inside_a_running_loop_still_answers() -> None:
    """A notebook or an ``async def`` calling sync code: a helper thread runs the call."""
    with FakeServer(echo, prefix="/v1") as server:
        model = OpenAIModel("m", base_url=server.base_url)

        async def main() -> str:
            return model.complete(HI).text

        assert asyncio.run(main()) == "echo: hi"


def test_timeout_bounds_the_whole_call_retries_included(wire: Any) -> None:
    limited = {"error": {"message": "slow down", "type": "tokens"}}
    for _ in range(4):  # each retry waits 0.4 s: 1.2 s in all without a bound
        wire.json(limited, status=429, headers={"retry-after-ms": "400"})
    model = OpenAIModel("m", base_url=f"{wire.base_url}/v1", max_retries=3)
    began = time.perf_counter()
    with pytest.raises(ModelError, match=r"timed out") as caught:
        model.complete(ModelRequest(messages=HI.messages, timeout_s=0.5))
    assert time.perf_counter() - began < 1.0
    assert isinstance(caught.value.__cause__, TimeoutError)


def test_timeout_reaches_the_sdk_for_a_slow_reply(wire: Any) -> None:
    wire.json(chat_completion("late", {}), delay_s=2.0)
    model = OpenAIModel("m", base_url=f"{wire.base_url}/v1", max_retries=0)
    began = time.perf_counter()
    with pytest.raises(ModelError, match=r"timed out"):
        asyncio.run(model.acomplete(ModelRequest(messages=HI.messages, timeout_s=0.3)))
    assert time.perf_counter() - began < 1.5


def test_sdk_errors_are_converted_with_their_cause(wire: Any) -> None:
    wire.json({"error": {"message": "overloaded"}}, status=503)
    model = OpenAIModel("m", base_url=f"{wire.base_url}/v1", max_retries=0)
    with pytest.raises(ModelError, match=r"server answered 503 \(overloaded\)") as caught:
        model.complete(HI)
    assert isinstance(caught.value.__cause__, openai.InternalServerError)


def test_sync_first_backend_streams_on_the_loop_in_order(tmp_path: Path) -> None:
    script = tmp_path / "r.json"
    script.write_text(json.dumps(["one", "two"]))
    model = ReplayModel(script)
    seen: list[tuple[str, int]] = []

    async def main() -> list[str]:
        texts = []
        for _ in range(2):
            reply = await model.acomplete(
                HI, on_text=lambda t: seen.append((t, threading.get_ident()))
            )
            assert seen[-1][0] == reply.text  # delivered before acomplete returned
            texts.append(reply.text)
        return texts

    assert asyncio.run(main()) == ["one", "two"]
    assert {ident for _, ident in seen} == {threading.get_ident()}  # on the loop's thread
    model.advance_to(5)
    with pytest.raises(ModelError, match="no reply left for model call 6"):
        model.complete(HI)
