"""Money in ``tao run`` and ``tao runs`` (issue 15): the footer, the list, ``--max-cost``.

The model is OpenAI's chat-completions API as recorded on the wire (usage with cached
prompt tokens, streamed as server-sent events for the live display), served by a real
HTTP server on 127.0.0.1; ``tao`` runs as a child process. Expected prices come from
the price table itself (``genai_prices``), never a number copied by hand.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from genai_prices import Usage as TableUsage
from genai_prices import calc_price
from tests.fakes.http import FakeServer, Reply, Request, recorded_chunks

from tao.format import format_cost

REPLIES = [
    (
        "Thought: I need to compute 17 * 23 + 4.\nAction: calculator[17 * 23 + 4]",
        {"prompt_tokens": 182, "completion_tokens": 21, "cached_tokens": 0},
    ),
    (
        "Thought: I have it.\nAction: finish[395]",
        {"prompt_tokens": 1214, "completion_tokens": 12, "cached_tokens": 1024},
    ),
]


def _usage(counts: dict[str, int]) -> dict[str, Any]:
    """The ``usage`` object as the API sends it."""
    prompt, completion = counts["prompt_tokens"], counts["completion_tokens"]
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": counts["cached_tokens"], "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _completion(content: str, counts: dict[str, int]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-CN3mU6zYjYq2",
        "object": "chat.completion",
        "created": 1_764_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(counts),
        "service_tier": "default",
        "system_fingerprint": "fp_560af6e559",
    }


def _stream(content: str, counts: dict[str, int]) -> list[str]:
    """The same reply as chat.completion.chunk events: text, finish, usage last, [DONE]."""
    half = len(content) // 2
    parts = ({"content": content[:half]}, {"content": content[half:]})
    return recorded_chunks(*parts, usage=_usage(counts))


class OpenAIWire:
    """Serves :data:`REPLIES` in order, streamed when the SDK asks for a stream."""

    def __init__(self) -> None:
        self.script = list(REPLIES)
        self._lock = threading.Lock()
        self.server = FakeServer(self._answer, prefix="/v1")

    def _answer(self, request: Request) -> Reply:
        with self._lock:
            if not self.script:
                return Reply.json({"error": {"message": "no scripted reply left"}}, 500)
            content, counts = self.script.pop(0)
        if request.body.get("stream"):
            return Reply.sse(_stream(content, counts))
        return Reply.json(_completion(content, counts))


@pytest.fixture
def openai_wire() -> Iterator[OpenAIWire]:
    wire = OpenAIWire()
    with wire.server:
        yield wire


def _price(counts: dict[str, int]) -> float:
    usage = TableUsage(
        input_tokens=counts["prompt_tokens"],
        output_tokens=counts["completion_tokens"],
        cache_read_tokens=counts["cached_tokens"],
    )
    return float(calc_price(usage, "gpt-4o-mini", provider_id="openai").total_price)


def _run(tao_cli: Any, wire: OpenAIWire, *extra: str) -> Any:
    return tao_cli(
        "run",
        "What is 17 * 23 + 4?",
        "--model",
        "openai:gpt-4o-mini",
        "--base-url",
        wire.server.base_url,
        "--tools",
        "calc",
        "--protocol",
        "text",
        *extra,
        env={"COLUMNS": "200"},
    )


def test_the_footer_and_runs_list_show_what_the_run_cost(
    tao_cli: Any, openai_wire: OpenAIWire
) -> None:
    """The live display's footer and `tao runs list` carry the run's price, cached tokens
    priced at their own rate; `runs show --json` has it per step and in the usage."""
    out = _run(tao_cli, openai_wire)
    assert out.returncode == 0, out.stderr
    first, second = (_price(counts) for _, counts in REPLIES)
    total = first + second
    assert f"· cost {format_cost(total)} ·" in out.stdout
    assert format_cost(first) in out.stdout  # the first step's own line
    # The cached 1024 tokens really were billed at the cache-read rate.
    full = calc_price(
        TableUsage(input_tokens=1214, output_tokens=12), "gpt-4o-mini", provider_id="openai"
    ).total_price
    assert second < float(full)

    listed = tao_cli("runs", "list", env={"COLUMNS": "200"}).stdout.splitlines()
    assert "Cost" in listed[0].split()
    assert format_cost(total) in listed[1] and "finished" in listed[1]
    (summary,) = json.loads(tao_cli("runs", "list", "--json").stdout)
    assert summary["cost_usd"] == pytest.approx(total)
    shown = json.loads(tao_cli("runs", "show", summary["run_id"], "--json").stdout)
    assert shown["usage"]["cost_usd"] == pytest.approx(total)
    assert [s["cost_usd"] for s in shown["steps"]] == [pytest.approx(first), pytest.approx(second)]
    text = tao_cli("runs", "show", summary["run_id"], env={"COLUMNS": "200"}).stdout
    assert f"· cost {format_cost(total)} ·" in text


def test_max_cost_stops_the_run_naming_the_cost_budget(
    tao_cli: Any, openai_wire: OpenAIWire
) -> None:
    """--max-cost: once the run has cost that much, it stops as a spent budget (max_steps,
    exit 3) whose stop_reason names the cost; the limit is recorded with the run."""
    first = _price(REPLIES[0][1])
    out = _run(tao_cli, openai_wire, "--max-cost", f"{first / 2:.8f}", "--json")
    assert out.returncode == 3, out.stderr
    data = json.loads(out.stdout)
    assert (data["status"], len(data["steps"])) == ("max_steps", 1)
    assert data["stop_reason"].startswith("cost limit of $")
    assert "reached" in data["stop_reason"]
    assert data["usage"]["cost_usd"] == pytest.approx(first)
    assert len(openai_wire.server.requests) == 1  # the second call was never made
    (summary,) = json.loads(tao_cli("runs", "list", "--json").stdout)
    assert summary["config"]["max_cost_usd"] == pytest.approx(first / 2)  # resume applies it
    assert summary["stop_reason"] == data["stop_reason"]


def test_a_cost_limit_on_a_model_without_a_price_is_refused_at_the_start(
    tao_cli: Any, openai_wire: OpenAIWire, tmp_path: Any
) -> None:
    """A budget that cannot be enforced is a usage error (exit 2), before any model call."""
    served = tao_cli(
        "run", "hi", "-m", "openai:qwen2.5", "--base-url", openai_wire.server.base_url,
        "--max-cost", "0.50",
    )  # fmt: skip
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["Action: finish[1]"]), encoding="utf-8")
    replayed = tao_cli("run", "hi", "-m", f"replay:{script}", "--max-cost", "0.50")
    for out, name in ((served, "openai:qwen2.5"), (replayed, "replay:")):
        assert out.returncode == 2, out.stderr
        assert "cost limit" in out.stderr and name in out.stderr and "no price" in out.stderr
        assert "Traceback" not in out.stderr
    assert openai_wire.server.requests == []
    assert json.loads(tao_cli("runs", "list", "--json").stdout) == []  # nothing was started


def test_a_resumed_run_keeps_its_cost_and_its_cost_limit(
    tao_cli: Any, openai_wire: OpenAIWire, tmp_path: Any
) -> None:
    """The reply a paused run waits on is charged once, on resume, at its recorded price, and
    `tao resume` (a new process, the settings from the run log) applies the recorded limit."""
    project = tmp_path / "proj"
    project.mkdir()
    counts = {"prompt_tokens": 240, "completion_tokens": 30, "cached_tokens": 0}
    openai_wire.script = [
        ('Thought: write it.\nAction: write_file(path="notes.txt", content="hi\\n")', counts),
        ("Thought: done.\nAction: finish[written]", counts),
    ]
    price = _price(counts)
    paused = tao_cli(
        "run", "write notes", "-m", "openai:gpt-4o-mini", "--base-url",
        openai_wire.server.base_url, "--protocol", "text", "-t", "write", "--project",
        str(project), "--max-cost", f"{price / 2:.8f}", "--no-input", "--json",
    )  # fmt: skip
    assert paused.returncode == 4, paused.stderr
    run_id = json.loads(paused.stdout)["run_id"]
    assert tao_cli("runs", "approve", run_id).returncode == 0
    resumed = tao_cli("resume", run_id, "--json")
    assert resumed.returncode == 3, resumed.stderr
    data = json.loads(resumed.stdout)
    assert (project / "notes.txt").read_text() == "hi\n"
    assert data["status"] == "max_steps" and "reached" in data["stop_reason"]
    assert data["usage"]["cost_usd"] == pytest.approx(price)
    assert len(openai_wire.server.requests) == 1  # the limit held: no second call
