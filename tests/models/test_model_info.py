"""The window a provider's model-info endpoint reports (issue 27), read from real HTTP
servers on 127.0.0.1 that answer in each server's own shape."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from tests.fakes.http import FakeServer, Reply, Request
from tests.fakes.window import WindowServer

from tao import Agent, RunConfig, Status, tool
from tao.models.modelinfo import reported_window

Answer = Callable[[Request], Reply]


def listing(*entries: dict[str, Any]) -> Answer:
    """``GET /v1/models`` answered with ``entries``; anything else: 404."""

    def answer(request: Request) -> Reply:
        if request.method == "GET" and request.path == "/v1/models":
            return Reply.json({"object": "list", "data": list(entries)})
        return Reply.json({"error": "not found"}, 404)

    return answer


def llamacpp(request: Request) -> Reply:
    """llama.cpp's server: trained with 32k, run with 4k (``/props``)."""
    if request.path == "/v1/models":
        return Reply.json({"data": [{"id": "qwen.gguf", "meta": {"n_ctx_train": 32768}}]})
    if request.path == "/props":
        return Reply.json({"default_generation_settings": {"n_ctx": 4096}})
    return Reply.json({}, 404)


def ollama(num_ctx: str) -> Answer:
    """Ollama: its OpenAI listing says no window; ``/api/show`` does."""

    def answer(request: Request) -> Reply:
        if request.path == "/v1/models":
            return Reply.json({"object": "list", "data": [{"id": "llama3.2", "object": "model"}]})
        if request.path == "/api/show" and request.body == {"model": "llama3.2"}:
            return Reply.json(
                {
                    "parameters": num_ctx,
                    "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
                }
            )
        return Reply.json({}, 404)

    return answer


def anthropic(request: Request) -> Reply:
    if request.path == "/v1/models/claude-next" and request.headers.get("x-api-key") == "k":
        return Reply.json({"type": "model", "id": "claude-next", "max_input_tokens": 400_000})
    return Reply.json({"type": "error"}, 404)


def gemini(request: Request) -> Reply:
    if request.path == "/v1beta/models/gemini-next" and request.headers.get("x-goog-api-key"):
        return Reply.json({"name": "models/gemini-next", "inputTokenLimit": 2_097_152})
    return Reply.json({}, 404)


SHAPES = ["vllm", "router", "llama.cpp", "ollama-num_ctx", "ollama-model", "anthropic", "gemini"]
SHAPES += ["silent"]


@pytest.mark.parametrize(
    ("provider", "model", "answer", "expected"),
    [
        ("openai", "qwen", listing({"id": "qwen", "max_model_len": 8192}), 8192),  # vLLM
        (  # a router listing many models: the entry whose id is the model
            "openai",
            "meta/llama-3-8b",
            listing(
                {"id": "other", "context_length": 1000},
                {"id": "meta/llama-3-8b", "context_length": 8000, "top_provider": {}},
            ),
            8000,
        ),
        ("openai", "qwen", llamacpp, 4096),  # the context it runs with, not its training's
        ("openai", "llama3.2", ollama("stop <eot>\nnum_ctx 16384"), 16384),
        ("openai", "llama3.2", ollama(""), 131072),
        ("anthropic", "claude-next", anthropic, 400_000),
        ("gemini", "gemini-next", gemini, 2_097_152),
        ("openai", "qwen", listing({"id": "qwen", "object": "model"}), None),  # says nothing
    ],
    ids=SHAPES,
)
def test_each_servers_shape_is_read(
    provider: str, model: str, answer: Answer, expected: int | None
) -> None:
    """vLLM, an OpenRouter-like router, llama.cpp, Ollama, Anthropic and Gemini each say
    the window their own way; a server that says nothing leaves it unknown."""
    with FakeServer(answer, model_info=True) as server:
        base = server.base_url + ("/v1" if provider == "openai" else "")
        assert reported_window(provider, base, model, "k") == expected


def test_never_fatal_and_bounded() -> None:
    """A server that is down, answers garbage or stalls leaves the window unknown, within
    the timeout: asking never fails a run."""
    with FakeServer(lambda r: Reply(200, {}, (b"<html>not json",)), model_info=True) as junk:
        assert reported_window("openai", junk.base_url, "m", None) is None
    with FakeServer(lambda r: Reply.json({"data": []}, delay_s=5.0), model_info=True) as slow:
        started = time.monotonic()
        assert reported_window("openai", slow.base_url, "m", None, timeout_s=0.5) is None
        assert time.monotonic() - started < 3.0
    closed = FakeServer(listing())
    closed.stop()
    assert reported_window("openai", closed.base_url, "m", None) is None


@tool
def read(n: int) -> str:
    """Read file number n."""
    return f"file {n} begins. " + ("lorem ipsum dolor sit amet " * 62)[:1600] + f" file {n} ends."


def test_a_run_keeps_to_the_window_its_server_reports() -> None:
    """No --context-window, a model no table knows: the run asks the server, and then
    compacts before the window (no request refused), recording the window it kept to;
    another agent of the process for the same server and model does not ask again."""
    config = RunConfig(max_steps=40, max_tokens=10**8, protocol="text")
    with WindowServer(window=6000, reads=30, says_window=True) as server:
        agent = Agent("openai:scripted", tools=[read], base_url=server.base_url, api_key="k",
                      config=config)  # fmt: skip
        result = agent.run("Read files 1 to 30, one a step, then say you are done.")
        Agent("openai:scripted", tools=[read], base_url=server.base_url, api_key="k")
        asked = [r for r in server.requests if r.method == "GET"]
    assert result.status is Status.FINISHED, (result.error, result.stop_reason)
    assert server.refused == 0
    made = [c for s in result.steps for c in s.compactions]
    assert made and {c.window for c in made} == {6000}
    assert [r.path for r in asked] == ["/v1/models"]


def test_a_run_that_compacts_nothing_does_not_ask() -> None:
    """``--compaction none`` needs no window: nothing is asked."""
    config = RunConfig(max_steps=5, protocol="text", compaction="none")
    with WindowServer(window=6000, reads=2, says_window=True) as server:
        Agent("openai:scripted", tools=[read], base_url=server.base_url, api_key="k",
              config=config).run("Read files 1 to 2.")  # fmt: skip
        assert [r for r in server.requests if r.method == "GET"] == []
