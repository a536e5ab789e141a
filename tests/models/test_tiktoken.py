"""OpenAI models' prompts counted with tiktoken, the optional ``tao[tiktoken]`` (issue 27).

tiktoken's wheel ships no vocabulary: it downloads an encoding's file at first use, which
no test may do (``tests/conftest.py`` gives each test an empty ``TIKTOKEN_CACHE_DIR`` and
https only through a closed loopback port). So the offline path is tested as a user
without network meets it, through a real run; and the counting path with a real tiktoken
``Encoding`` (byte-level) registered under ``o200k_base``, as a cached file would be.
"""

from __future__ import annotations

import sys
import warnings

import pytest
import tiktoken
import tiktoken.registry
from tests.fakes.window import WindowServer

from tao import Agent, RunConfig, Status, tool
from tao.models import window
from tao.models.window import TiktokenCount, counter_of, estimate

MESSAGES = [
    {"role": "system", "content": "You answer questions."},
    {"role": "user", "content": "What is the capital of France? Ünïcödé costs more bytes."},
]


@pytest.fixture(autouse=True)
def fresh_encodings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test loads (or fails to load) its encodings anew."""
    monkeypatch.setattr(window, "_ENCODINGS", {})


@tool
def read(n: int) -> str:
    """Read file number n."""
    return f"file {n} begins. " + ("lorem ipsum dolor sit amet " * 62)[:1600] + f" file {n} ends."


def test_openai_models_count_with_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt-4o (and a routed name for it) count with tiktoken's o200k_base, gpt-4 with
    cl100k_base; a model tiktoken does not know (an open model behind an OpenAI-compatible
    server, Claude) keeps the estimate: tiktoken's count would be a guess there."""
    bytewise = tiktoken.Encoding(
        name="o200k_base",
        pat_str=r"\S+|\s+",
        mergeable_ranks={bytes([b]): b for b in range(256)},
        special_tokens={},
    )
    monkeypatch.setitem(tiktoken.registry.ENCODINGS, "o200k_base", bytewise)
    for name in ("openai:gpt-4o", "openai:openrouter/openai/gpt-4o-mini"):
        count = counter_of(Agent(name, api_key="k", base_url="http://127.0.0.1:9/v1").model)
        assert count == TiktokenCount("o200k_base")
        by_bytes = sum(len(m["content"].encode()) + window.MESSAGE_OVERHEAD for m in MESSAGES)
        assert count(MESSAGES) == by_bytes != estimate(MESSAGES)
        assert not isinstance(count, TiktokenCount) or not count.estimating
    gpt4 = Agent("openai:gpt-4", api_key="k", base_url="http://127.0.0.1:9/v1").model
    assert counter_of(gpt4) == TiktokenCount("cl100k_base")
    for name in ("openai:llama-3.1-8b-instruct", "anthropic:claude-sonnet-4"):
        assert counter_of(Agent(name, api_key="k", base_url="http://127.0.0.1:9/v1").model) is (
            estimate
        )


def test_offline_tiktoken_warns_once_and_the_run_goes_on_with_the_estimate() -> None:
    """No network and no cached file: the first count warns once, clearly (what failed, the
    cache variable, what tao does instead); the run compacts with the estimate and finishes."""
    import detect_secrets.core.log  # noqa: F401  (its import routes warnings to logging: first)

    config = RunConfig(max_steps=40, max_tokens=10**8, protocol="text", context_window=6000)
    with (
        WindowServer(window=6000, reads=30) as server,
        warnings.catch_warnings(record=True) as seen,
    ):
        warnings.simplefilter("always")
        agent = Agent("openai:gpt-4o", tools=[read], base_url=server.base_url, api_key="k",
                      config=config)  # fmt: skip
        result = agent.run("Read files 1 to 30, one a step, then say you are done.")
    assert result.status is Status.FINISHED, (result.error, result.stop_reason)
    told = [w for w in seen if "tiktoken" in str(w.message)]
    assert len(told) == 1, [str(w.message) for w in told]
    text = str(told[0].message)
    assert "o200k_base" in text and "TIKTOKEN_CACHE_DIR" in text and "estimate" in text
    assert server.refused == 0
    assert sum(len(s.compactions) for s in result.steps) >= 2


def test_without_the_extra_openai_models_are_estimated(monkeypatch: pytest.MonkeyPatch) -> None:
    """``tao[tiktoken]`` not installed: gpt-4o is counted with the estimate, silently."""
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import raises ImportError
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = Agent("openai:gpt-4o", api_key="k", base_url="http://127.0.0.1:9/v1").model
        assert counter_of(model) is estimate
