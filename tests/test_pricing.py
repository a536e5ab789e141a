"""Money cost from the price table (issue 15): the table's own numbers, unknown never zero.

Every expected price is asked of ``genai_prices`` itself, the maintained table tao
uses, so these tests check tao's mapping (provider names, cached tokens, base URLs,
sums over a run), not a price copied by hand that goes stale.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from genai_prices import Usage as TableUsage
from genai_prices import calc_price

from tao.agent import Agent
from tao.errors import ConfigError
from tao.format import format_cost
from tao.models.openai import OpenAIModel
from tao.models.pricing import PriceKey, Tokens, cost_known, cost_usd, known
from tao.state.budget import Budget, Usage
from tao.state.config import RunConfig
from tao.state.result import Step, StepKind


def _table(model: str, provider: str, **usage: int) -> float:
    return float(calc_price(TableUsage(**usage), model, provider_id=provider).total_price)


def test_openai_price_with_cached_input_is_the_tables() -> None:
    key = PriceKey("openai", "gpt-4o-mini")
    plain = cost_usd(key, Tokens(1200, 150))
    cached = cost_usd(key, Tokens(1200, 150, cache_read=1024))
    assert plain == _table("gpt-4o-mini", "openai", input_tokens=1200, output_tokens=150)
    assert cached == _table(
        "gpt-4o-mini", "openai", input_tokens=1200, output_tokens=150, cache_read_tokens=1024
    )
    assert cached is not None and plain is not None and 0 < cached < plain  # cache reads are cheap


def test_anthropic_cache_reads_and_writes_and_gemini_are_the_tables() -> None:
    tokens = Tokens(5000, 300, cache_read=2000, cache_write=1000)
    assert cost_usd(PriceKey("anthropic", "claude-sonnet-4-5"), tokens) == _table(
        "claude-sonnet-4-5",
        "anthropic",
        input_tokens=5000,
        output_tokens=300,
        cache_read_tokens=2000,
        cache_write_tokens=1000,
    )
    # tao's `gemini:` prefix is the table's `google` provider
    assert cost_usd(PriceKey("gemini", "gemini-2.5-flash"), Tokens(1000, 100)) == _table(
        "gemini-2.5-flash", "google", input_tokens=1000, output_tokens=100
    )


def test_a_known_providers_base_url_prices_at_that_provider() -> None:
    """openai:MODEL against Groq's URL is Groq's price, not OpenAI's."""
    groq = "https://api.groq.com/openai/v1"
    price = cost_usd(PriceKey("openai", "llama-3.1-8b-instant", groq), Tokens(1000, 100))
    expected = calc_price(
        TableUsage(input_tokens=1000, output_tokens=100),
        "llama-3.1-8b-instant",
        provider_api_url=groq,
    ).total_price
    assert price == float(expected) and expected > Decimal(0)


def test_unknown_models_cost_unknown_never_zero() -> None:
    local_server = "http://127.0.0.1:8000/v1"
    for key in (
        PriceKey("openai", "qwen2.5", local_server),  # vLLM/Ollama/tao serve under its own name
        PriceKey("openai", "no-such-model-2099"),
        PriceKey("replay", "script.json"),  # a provider the table does not know
    ):
        assert cost_usd(key, Tokens(1000, 100)) is None
        assert not known(key)
    # Counts the table refuses (a server reporting nonsense) are unknown too, never a crash.
    assert cost_usd(PriceKey("openai", "gpt-4o-mini"), Tokens(-5, 3)) is None
    # A proxy or test server in front of a listed model: priced as the spec's provider.
    assert cost_usd(PriceKey("openai", "gpt-4o-mini", local_server), Tokens(10, 1)) == _table(
        "gpt-4o-mini", "openai", input_tokens=10, output_tokens=1
    )


def test_a_backend_knows_whether_it_is_priced() -> None:
    served = OpenAIModel("qwen2.5", base_url="http://127.0.0.1:1/v1")
    listed = OpenAIModel("gpt-4o-mini", base_url="http://127.0.0.1:1/v1")
    assert (cost_known(served), cost_known(listed)) == (False, True)
    assert not cost_known(object())  # a model object that says nothing about its price


def _step(index: int, cost: float | None, **fields: object) -> Step:
    return Step(index=index, kind=StepKind.ACTION, input_tokens=10, cost_usd=cost).replace(**fields)


def test_a_runs_cost_is_unknown_once_one_answered_call_has_no_price() -> None:
    usage = Usage().plus(_step(1, 0.25)).plus(_step(2, 0.5))
    assert usage.cost_usd == 0.75
    # A parallel call of the same reply adds nothing; a failed call is not billed.
    usage = usage.plus(_step(3, 0.0, call_index=1))
    usage = usage.plus(_step(4, None, kind=StepKind.MODEL_ERROR))
    assert (usage.cost_usd, usage.model_calls) == (0.75, 3)
    assert usage.plus(_step(5, None)).cost_usd is None
    assert usage.plus(_step(5, None)).plus(_step(6, 1.0)).cost_usd is None
    # A usage record written before costs were kept: unknown, not $0.
    assert Usage.from_json({"model_calls": 2, "input_tokens": 5}).cost_usd is None
    assert Usage().cost_usd == 0.0  # nothing spent yet


def test_the_cost_budget_stops_at_its_limit_and_when_the_cost_is_unknown() -> None:
    budget = Budget.of(RunConfig(max_cost_usd=0.01))
    assert budget.exhausted(1, 0.0, Usage(cost_usd=0.0099)) is None
    spent = budget.exhausted(1, 0.0, Usage(cost_usd=0.0125))
    assert spent == "cost limit of $0.01 reached ($0.0125 spent)"
    unknown = budget.exhausted(1, 0.0, Usage(cost_usd=None))
    assert unknown == "cost limit of $0.01 cannot be kept: the cost is unknown"
    assert Budget.of(RunConfig()).exhausted(1, 0.0, Usage(cost_usd=None)) is None  # no limit
    with pytest.raises(ValueError, match="max_cost_usd must be positive"):
        RunConfig(max_cost_usd=0)
    assert RunConfig.from_json(RunConfig(max_cost_usd=0.5).to_json()).max_cost_usd == 0.5


def test_costs_read_as_dollars_or_unknown() -> None:
    assert format_cost(None) == "unknown"
    assert format_cost(0.0) == "$0.0000"
    assert format_cost(0.01234) == "$0.0123"
    assert format_cost(0.0000231) == "$0.000023"
    assert format_cost(12.5) == "$12.5000"


def test_the_python_api_refuses_a_cost_limit_it_cannot_keep(replay: Any) -> None:
    script = replay(["Action: finish[1]"])
    for settings in ({"max_cost_usd": 0.5}, {"config": RunConfig(max_cost_usd=0.5)}):
        with pytest.raises(ConfigError, match=r"cost limit .* replay:.* no price"):
            Agent(f"replay:{script}", record=False, **settings)  # type: ignore[arg-type]
    # Without a limit the same model runs, its cost unknown.
    result = Agent(f"replay:{script}", record=False).run("one?")
    assert (result.answer, result.usage.cost_usd, result.steps[0].cost_usd) == ("1", None, None)
