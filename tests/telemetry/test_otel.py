"""OpenTelemetry export as a user gets it: a real OTLP/HTTP receiver on 127.0.0.1 decoding
the protobuf tao's exporter sends, from a real ``tao run`` process and from library code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.models import CalculatorScript
from tests.fakes.otlp import OtlpReceiver, ReceivedSpan

from tao.store.factory import open_store

Replay = Callable[[list[Any]], Path]
SRC = Path(__file__).resolve().parents[2] / "src"
SECRET = "sk-proj-Zq3vT8wLmN4pR7sK2yB6hD9fJ1cX5aE0gU"

#: A failing call, a good call, the answer: three steps, two tool calls, one of them an error.
SCRIPT = [
    "Thought: divide first.\nAction: calculator[1/0]",
    "Thought: that failed; add instead.\nAction: calculator[2+2]",
    "Thought: I have it.\nAction: finish[4]",
]
CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return {**env, **extra}


def _children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> list[ReceivedSpan]:
    return sorted(
        (span for span in spans if span.parent_id == parent.span_id), key=lambda s: s.start_ns
    )


def _one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [span for span in spans if span.name == name]
    assert len(found) == 1, [span.name for span in spans]
    return found[0]


def test_tao_run_exports_run_step_model_and_tool_spans_before_it_exits(
    tao_cli: Any, replay: Replay, receiver: OtlpReceiver
) -> None:
    script = replay(SCRIPT)
    out = tao_cli(
        "run", "What is 2 + 2?", "--model", f"replay:{script}", "-t", "calc", "--json",
        env=_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    # The process has exited: every span must already be here (flushed at exit), no waiting.
    spans = list(receiver.spans)
    assert receiver.posts and {p for p, _ in receiver.posts} == {"/v1/traces"}
    assert all(kind == "application/x-protobuf" for _, kind in receiver.posts)
    run = _one(spans, "invoke_agent tao")
    assert run.parent_id == "" and run.resource["service.name"] == "tao"
    assert {span.trace_id for span in spans} == {run.trace_id}
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "tao"
    assert run.attributes["tao.run.id"] == result["run_id"]
    assert run.attributes["gen_ai.conversation.id"] == result["run_id"]
    assert run.attributes["tao.run.status"] == "finished" and run.status_code == "UNSET"
    assert run.attributes["gen_ai.usage.input_tokens"] == result["usage"]["input_tokens"]
    assert run.attributes["gen_ai.usage.output_tokens"] == result["usage"]["output_tokens"]

    steps = _children(spans, run)
    assert [s.name for s in steps] == ["tao.step"] * 3
    assert [s.attributes["tao.step.index"] for s in steps] == [1, 2, 3]
    assert [s.attributes["tao.step.kind"] for s in steps] == ["action", "action", "final"]
    below = [[c.name for c in _children(spans, step)] for step in steps]
    chat_name, tool_name = f"chat {script}", "execute_tool calculator"
    assert below == [[chat_name, tool_name], [chat_name, tool_name], [chat_name]]
    chats = [_children(spans, step)[0] for step in steps]
    for chat, step in zip(chats, result["steps"], strict=True):
        assert chat.kind == "CLIENT"
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "tao.replay"
        assert chat.attributes["gen_ai.usage.input_tokens"] == step["input_tokens"]
        assert chat.attributes["gen_ai.usage.output_tokens"] == step["output_tokens"]
    failed, added = (_children(spans, step)[1] for step in steps[:2])
    assert failed.attributes["gen_ai.operation.name"] == "execute_tool"
    assert failed.attributes["gen_ai.tool.name"] == "calculator"
    assert failed.status_code == "ERROR" and "division by zero" in failed.status_message
    assert failed.attributes["error.type"] == "tool_error"
    assert added.status_code == "UNSET" and "error.type" not in added.attributes
    # Content is opt-in (the GenAI conventions): none of it by default.
    assert not any(CONTENT_KEYS & span.attributes.keys() for span in spans)


def test_a_failing_model_call_is_an_error_span_and_so_is_the_run(
    tao_cli: Any, replay: Replay, receiver: OtlpReceiver
) -> None:
    script = replay(["Thought: add.\nAction: calculator[2+2]"])  # then no reply is left
    out = tao_cli(
        "run", "What is 2 + 2?", "--model", f"replay:{script}", "-t", "calc", "--no-log",
        env=_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{receiver.endpoint}/v1/traces"),
    )  # fmt: skip
    assert out.returncode == 1
    spans = list(receiver.spans)
    run = _one(spans, "invoke_agent tao")
    assert run.status_code == "ERROR" and "no reply left" in run.status_message
    assert run.attributes["tao.run.status"] == "error"
    assert run.attributes["error.type"] == "model_error"
    last = _children(spans, run)[-1]
    assert last.attributes["tao.step.kind"] == "model_error" and last.status_code == "ERROR"
    (chat,) = _children(spans, last)
    assert chat.status_code == "ERROR" and chat.attributes["error.type"] == "ModelError"
    assert "no reply left" in chat.status_message


def test_library_run_nests_in_the_callers_span_with_parallel_calls_and_redacted_content(
    replay: Replay, receiver: OtlpReceiver
) -> None:
    """``arun`` with an explicit provider: the run is a child of the span current where it
    was started; two native calls of one reply are two tool spans of one step; with content
    capture on, payloads are there and secrets are not."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from tao import Agent, tool
    from tao.telemetry.otel import OpenTelemetry

    @tool
    def read_config(name: str) -> str:
        """Read a configuration value."""
        if name == "missing":
            raise KeyError(name)
        return f"OPENAI_API_KEY={SECRET}"

    script = replay(
        [
            {
                "content": "Two lookups.",
                "tool_calls": [
                    {"name": "read_config", "arguments": {"name": "api"}, "id": "call_a"},
                    {"name": "read_config", "arguments": {"name": "missing"}, "id": "call_b"},
                ],
            },
            {"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "done"}}]},
        ]
    )
    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces"))
    )
    agent = Agent(f"replay:{script}", [read_config], record=False, protocol="native")
    agent.telemetry = OpenTelemetry(provider, capture_content=True)
    import asyncio

    with provider.get_tracer("app").start_as_current_span("handle request") as outer:
        result = asyncio.run(agent.arun(f"Check the key {SECRET}"))
    provider.shutdown()
    assert result.status == "finished"
    spans = receiver.wait_for("handle request")
    run = _one(spans, "invoke_agent tao")
    assert run.parent_id == format(outer.get_span_context().span_id, "016x")
    first, second = _children(spans, run)
    assert first.attributes["tao.step.calls"] == 2
    chat, *tools = _children(spans, first)
    assert chat.name.startswith("chat ")
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert sorted(t.attributes["gen_ai.tool.call.id"] for t in tools) == ["call_a", "call_b"]
    by_id = {t.attributes["gen_ai.tool.call.id"]: t for t in tools}
    assert by_id["call_a"].status_code == "UNSET"
    assert by_id["call_b"].status_code == "ERROR"
    assert by_id["call_b"].attributes["error.type"] == "KeyError"
    assert "[REDACTED]" in by_id["call_a"].attributes["gen_ai.tool.call.result"]
    assert json.loads(by_id["call_b"].attributes["gen_ai.tool.call.arguments"]) == {
        "name": "missing"
    }
    assert "[REDACTED]" in run.attributes["gen_ai.input.messages"]
    assert json.loads(run.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == "done"
    assert "gen_ai.input.messages" in _children(spans, second)[0].attributes
    everything = json.dumps([span.attributes for span in spans]) + str(spans)
    assert SECRET not in everything
    assert trace.get_tracer_provider() is not provider  # nothing global was touched


def _python(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


_RUN_AND_LIST_MODULES = """
    import runpy, sys
    sys.argv = ["tao", "run", "hi", "--model", "replay:" + sys.argv[1], "--json"]
    try:
        runpy.run_module("tao", run_name="__main__")
    except SystemExit as exit:
        assert exit.code == 0, exit.code
    print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"), file=sys.stderr)
"""


def test_with_no_endpoint_tao_never_imports_opentelemetry(
    replay: Replay, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    script = str(replay(["Action: finish[4]"]))
    code = _RUN_AND_LIST_MODULES.replace("sys.argv[1]", repr(script))
    off = _python(code, _env(), tmp_path)
    assert off.returncode == 0, off.stderr
    assert off.stderr.strip().splitlines()[-1] == "[]"
    listing = "import tao, sys; print([m for m in sys.modules if 'opentelemetry' in m])"
    imported = _python(listing, _env(), tmp_path)
    assert imported.stdout.strip() == "[]"
    on = _python(code, _env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint), tmp_path)
    assert on.returncode == 0, on.stderr
    assert "opentelemetry.sdk.trace" in on.stderr  # the same check sees it when it is on


def test_endpoint_set_without_the_extra_warns_once_and_the_run_goes_on(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    missing = tmp_path / "no-otel"
    (missing / "opentelemetry").mkdir(parents=True)  # shadows the installed one, as if absent
    (missing / "opentelemetry" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'opentelemetry'\", name='opentelemetry')\n"
    )
    env = _env(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    env["PYTHONPATH"] = os.pathsep.join([str(missing), env["PYTHONPATH"]])
    out = tao_cli(
        "run", "hi", "--model", f"replay:{replay(['Action: finish[4]'])}", "--json", env=env
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["answer"] == "4"
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "OTEL_EXPORTER_OTLP_ENDPOINT is set, but OpenTelemetry is not installed" in lines[0]
    assert "pip install 'tao[otel]'" in lines[0]


def test_a_global_provider_the_program_set_is_used_without_any_variable(
    replay: Replay, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    script = replay(["Thought: add.\nAction: calculator[2+2]", "Action: finish[4]"])
    code = f"""
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider(resource=Resource({{"service.name": "my-app"}}))
        exporter = OTLPSpanExporter(endpoint="{receiver.endpoint}/v1/traces")
        provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

        from tao import Agent
        result = Agent("replay:{script}", ["calc"], record=False).run("What is 2 + 2?")
        assert result.answer == "4", result
        provider.shutdown()
    """
    done = _python(code, _env(), tmp_path)
    assert done.returncode == 0, done.stderr
    spans = receiver.wait_for("invoke_agent tao")
    assert {span.resource["service.name"] for span in spans} == {"my-app"}
    assert sorted(span.name for span in spans if span.name.startswith("execute_tool")) == [
        "execute_tool calculator"
    ]


def _exporting(receiver: OtlpReceiver) -> Any:
    """A provider of the test's own, sending each span to the receiver as it ends."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces")
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def test_a_paused_run_and_its_resume_are_two_traces_of_one_conversation_S3(
    replay: Replay, receiver: OtlpReceiver
) -> None:
    from tao import Agent, Status, tool
    from tao.approval.policy import Policy
    from tao.telemetry.otel import OpenTelemetry

    @tool(effects="deletes")
    def delete_log(path: str) -> str:
        """Delete a log file."""
        return f"deleted {path}"

    script = replay(["Thought: clean up.\nAction: delete_log[old.log]", "Action: finish[done]"])
    agent = Agent(f"replay:{script}", [delete_log], record=False, policy=Policy())
    provider = _exporting(receiver)
    agent.telemetry = OpenTelemetry(provider)
    paused = agent.run("clean up")
    assert paused.status is Status.AWAITING_APPROVAL
    done = agent.resume(paused, approve=True)
    assert done.status is Status.FINISHED
    provider.shutdown()
    spans = list(receiver.spans)
    first, second = sorted(
        (span for span in spans if span.name == "invoke_agent tao"), key=lambda s: s.start_ns
    )
    assert first.trace_id != second.trace_id
    assert first.attributes["gen_ai.conversation.id"] == paused.run_id
    assert second.attributes["gen_ai.conversation.id"] == paused.run_id
    assert first.attributes["tao.run.status"] == "awaiting_approval"
    assert first.attributes["tao.run.pending_tools"] == ["delete_log"]
    assert first.attributes["tao.run.resumed"] is False
    assert (second.attributes["tao.run.resumed"], second.attributes["tao.run.status"]) == (
        True,
        "finished",
    )
    (asked,) = _children(spans, first)
    assert [c.name for c in _children(spans, asked)] == [f"chat {script}"]  # no tool ran
    resumed, answered = _children(spans, second)
    assert resumed.attributes["tao.step.index"] == 1  # the same step, continued
    (deleting,) = _children(spans, resumed)  # the reply came from the checkpoint: no chat
    assert deleting.name == "execute_tool delete_log"
    assert deleting.attributes["tao.tool.effects"] == ["deletes"]
    assert [c.name for c in _children(spans, answered)] == [f"chat {script}"]


def test_a_run_cancelled_from_another_thread_still_ends_its_spans_R2(
    receiver: OtlpReceiver,
) -> None:

    from tao import Agent, Status
    from tao.telemetry.otel import OpenTelemetry

    two_steps = threading.Event()

    class Watch:
        def on_start(self, result: Any) -> None:
            pass

        def on_step(self, result: Any, step: Any) -> None:
            if len(result.steps) >= 2:
                two_steps.set()

        def on_finish(self, result: Any) -> None:
            pass

    agent = Agent(CalculatorScript(1_000, pause_s=0.05), ["calc"], record=False, max_steps=999)
    provider = _exporting(receiver)
    agent.telemetry = OpenTelemetry(provider)
    handle = agent.start("Add the numbers.", observers=[Watch()])
    assert two_steps.wait(30)
    handle.cancel()
    result = handle.result(timeout=10)
    assert result.status is Status.CANCELLED
    time.sleep(0.3)  # the model call in flight returns, and the driver stops
    provider.shutdown()
    spans = list(receiver.spans)
    run = _one(spans, "invoke_agent tao")
    assert run.attributes["tao.run.status"] == "cancelled"
    steps = _children(spans, run)
    assert {step.name for step in steps} == {"tao.step"}
    assert len(steps) >= len(result.steps) >= 2
    assert all(step.end_ns <= run.end_ns for step in steps)  # ended with the run, at cancel()
    # A call in flight at cancel() ends later, still under its step.
    assert all(
        span.parent_id in {s.span_id for s in steps}
        for span in spans
        if span.name == "chat scripted"
    )
    assert {span.trace_id for span in spans} == {run.trace_id}


def test_a_run_log_that_fails_mid_run_ends_the_run_span_with_its_error_R4(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    """The run log fills up (SQLite's page limit: a full disk): the run stops with a
    StoreError, and its spans still end, the run's with that error."""
    from tao import Agent
    from tao.errors import StoreError
    from tao.telemetry.otel import OpenTelemetry

    provider = _exporting(receiver)
    with open_store(tmp_path / "tao.db") as store:
        with store._read() as conn:
            row = conn.execute("PRAGMA page_count").fetchone()
            conn.execute(f"PRAGMA max_page_count = {int(row[0]) + 3:d}")
        agent = Agent(CalculatorScript(400), ["calc"], record=store, max_steps=401)
        agent.telemetry = OpenTelemetry(provider)
        with pytest.raises(StoreError):
            agent.run("Fill the disk.")
    provider.shutdown()
    spans = list(receiver.spans)
    run = _one(spans, "invoke_agent tao")
    assert run.status_code == "ERROR" and run.attributes["error.type"] == "StoreError"
    assert "is full" in run.status_message
    assert {span.trace_id for span in spans} == {run.trace_id}
    assert all(step.end_ns <= run.end_ns for step in _children(spans, run))


def test_a_spent_budget_is_the_runs_status_and_stop_reason_not_an_error_L5(
    replay: Replay, receiver: OtlpReceiver
) -> None:
    from tao import Agent, Status
    from tao.telemetry.otel import OpenTelemetry

    script = replay(["Thought: add.\nAction: calculator[2+2]", "Action: finish[4]"])
    agent = Agent(f"replay:{script}", ["calc"], record=False, max_tokens=10)
    provider = _exporting(receiver)
    agent.telemetry = OpenTelemetry(provider)
    result = agent.run("What is 2 + 2?")
    provider.shutdown()
    assert result.status is Status.MAX_STEPS and result.stop_reason
    run = _one(list(receiver.spans), "invoke_agent tao")
    assert run.attributes["tao.run.status"] == "max_steps"
    assert run.attributes["tao.run.stop_reason"] == result.stop_reason
    assert run.status_code == "UNSET"


def test_otel_sdk_disabled_turns_the_export_off_even_with_an_endpoint(
    replay: Replay, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tao import Agent

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    agent = Agent(f"replay:{replay(['Action: finish[4]'])}", record=False)
    assert agent.telemetry is None
    assert agent.run("hi").answer == "4"


def test_an_agent_used_as_a_tool_is_a_trace_nested_in_the_parents_tool_span(
    replay: Replay, receiver: OtlpReceiver
) -> None:
    """Issue 31: the child run's ``invoke_agent`` span is a child of the parent's
    ``execute_tool`` span for the call that started it: one trace, nested."""
    from tao import Agent, Status
    from tao.telemetry.otel import OpenTelemetry

    provider = _exporting(receiver)
    child = Agent(f"replay:{replay(['Action: calculator[6*7]', 'Action: finish[42]'])}",
                  ["calc"], record=False)  # fmt: skip
    child.telemetry = OpenTelemetry(provider)
    parent_script = replay(["Action: research[6 times 7]", "Action: finish[42]"])
    parent = Agent(f"replay:{parent_script}", [child.as_tool("research", "Research.")],
                   record=False)  # fmt: skip
    parent.telemetry = OpenTelemetry(provider)
    assert parent.run("What is 6*7?").status is Status.FINISHED
    provider.shutdown()
    spans = list(receiver.spans)
    call = _one(spans, "execute_tool research")
    runs = [span for span in spans if span.name == "invoke_agent tao"]
    assert len(runs) == 2
    nested = _children(spans, call)
    assert [span.name for span in nested] == ["invoke_agent tao"]
    assert {span.trace_id for span in spans} == {call.trace_id}
    assert "execute_tool calculator" in [s.name for s in spans]
