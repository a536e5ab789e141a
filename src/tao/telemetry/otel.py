"""The spans themselves, made with OpenTelemetry (``pip install 'tao[otel]'``).

One trace per run (a resumed run is a new trace with the same ``gen_ai.conversation.id``)::

    invoke_agent tao                 the run: status, stop reason, token totals
    ├── tao.step                     one turn of the loop (tao.step.index = 1)
    │   ├── chat gpt-4o-mini         the model call: tokens, finish reason
    │   └── execute_tool calculator  each tool call it asked for (error status if it failed)
    └── tao.step                     tao.step.index = 2
        └── chat gpt-4o-mini

The run's span is a child of whatever span is current where the run was started, so
an agent called inside a traced request shows up inside it. The model call's and the
tool call's spans are current while they run, so an instrumented HTTP client (the
provider SDK's) nests its spans under them.

    from opentelemetry.sdk.trace import TracerProvider
    agent.telemetry = OpenTelemetry(TracerProvider(...))   # or: the global provider
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode, Tracer, TracerProvider

from tao.errors import describe_error
from tao.models.base import Model, ModelReply, ModelRequest, OnText
from tao.state.calls import Outcome, Ready
from tao.state.result import RunResult, Status, Step, StepKind
from tao.telemetry import attributes as attrs
from tao.telemetry.hooks import Job, RunTracing, global_provider_set

_owning = threading.Lock()


class OpenTelemetry:
    """Sends each run's spans to ``provider`` (by default, the global TracerProvider).

    ``capture_content`` puts the task, the messages and tool payloads (redacted) in the
    spans; by default it follows ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.
    """

    def __init__(
        self, provider: TracerProvider | None = None, *, capture_content: bool | None = None
    ) -> None:
        self.provider = provider
        self.capture = attrs.capture_content() if capture_content is None else capture_content
        self._tracer: Tracer | None = None

    @classmethod
    def from_environment(cls) -> OpenTelemetry:
        """The program's own global provider if it set one; else a new one, made global,
        that exports over OTLP/HTTP as the standard ``OTEL_*`` variables say."""
        with _owning:
            if not global_provider_set():
                trace.set_tracer_provider(_exporting_provider())
        return cls()

    def start(self) -> RunTracing:
        if self._tracer is None:
            provider = self.provider or trace.get_tracer_provider()
            self._tracer = provider.get_tracer("tao", _version())
        return RunSpans(self._tracer, self.capture, otel_context.get_current())


def _exporting_provider() -> TracerProvider:
    """A provider batching spans to the OTLP/HTTP endpoint; it flushes them at exit, within
    a second and with one summary line if the collector is down (:mod:`tao.telemetry.export`),
    so a ``tao run`` loses none to a collector that answers."""
    from tao.telemetry.export import exporting_provider

    return exporting_provider()


def _version() -> str:
    try:
        return metadata.version("tao")
    except metadata.PackageNotFoundError:
        return "0"


@dataclass(slots=True)
class _Call:
    """What a model call's span learns once the call returns."""

    reply: ModelReply | None = None


class RunSpans:
    """One run's spans: the run, its steps, their model and tool calls.

    The driver calls it from its own thread; ``on_finish`` may come from another one
    (Ctrl-C, ``cancel()``), so the open spans are swapped under a lock.
    """

    def __init__(self, tracer: Tracer, capture: bool, parent: otel_context.Context) -> None:
        self._tracer, self._capture, self._parent = tracer, capture, parent
        self._lock = threading.Lock()
        self._run: Span | None = None
        self._ended = False
        self._step: Span | None = None
        #: The step that ended last: where a call still in flight after ``cancel()`` belongs.
        self._last: Span | None = None
        self._index: int | None = None
        self._steps: list[Step] = []
        self._model = ""

    # -- the run, as an observer -----------------------------------------------------------

    def on_start(self, result: RunResult) -> None:
        self._model = result.model
        self._run = self._tracer.start_span(
            f"invoke_agent {attrs.AGENT_NAME}",
            context=self._parent,
            kind=SpanKind.INTERNAL,
            attributes=attrs.run_start(result, self._capture),
        )

    def on_step(self, result: RunResult, step: Step) -> None:
        with self._lock:
            self._enter(step.index - step.call_index)
            self._steps.append(step)

    def on_finish(self, result: RunResult) -> None:
        run = self._close()
        if run is None:
            return
        run.set_attributes(attrs.run_end(result, self._capture))
        if result.status is Status.ERROR:  # the backend failed (a budget or a pause is no error)
            run.set_attribute("error.type", "model_error")
            run.set_status(StatusCode.ERROR, attrs.error_text(result.error or "the run failed"))
        run.end()

    def abandon(self, error: BaseException) -> None:
        run = self._close()
        if run is not None:
            run.set_attribute("error.type", type(error).__qualname__)
            run.set_status(StatusCode.ERROR, attrs.error_text(str(error)))
            run.end()

    # -- steps -------------------------------------------------------------------------------

    def turn(self, step: int) -> None:
        with self._lock:
            self._enter(step)

    def _enter(self, index: int) -> None:
        """Open the span of turn ``index`` (ending the one before), unless it is open."""
        if index == self._index or self._run is None or self._ended:
            return
        self._leave()
        self._index = index
        self._step = self._tracer.start_span(
            "tao.step",
            context=trace.set_span_in_context(self._run),
            attributes={"tao.step.index": index},
        )

    def _leave(self) -> None:
        step, steps = self._step, self._steps
        self._step, self._steps = None, []
        if step is None:
            return
        self._last = step
        if steps:
            step.set_attributes(attrs.step_end(steps))
            if steps[0].kind is StepKind.MODEL_ERROR:
                step.set_status(StatusCode.ERROR, "the model call failed")
        step.end()

    def _close(self) -> Span | None:
        """End the open step; the run's span, if it is still to be ended (once)."""
        with self._lock:
            self._leave()
            ended, self._ended = self._ended, True
        return None if ended else self._run

    def _inside(self) -> otel_context.Context:
        """The context a model or tool call's span is made in: its step (also once it ended:
        a call still in flight after ``cancel()`` stays where it belongs)."""
        with self._lock:
            span = self._step or self._last or self._run
        return trace.set_span_in_context(span, self._parent) if span else self._parent

    # -- model and tool calls ----------------------------------------------------------------

    def model(self, model: Model) -> Model:
        return TracedModel(model, self)

    @contextmanager
    def chat(self, request: ModelRequest) -> Iterator[_Call]:
        """A model call's span, current while the call runs; a failure is its error."""
        start = attrs.chat_start(self._model, request, self._capture)
        name = f"chat {start['gen_ai.request.model']}"
        span = self._tracer.start_span(
            name, context=self._inside(), kind=SpanKind.CLIENT, attributes=start
        )
        call = _Call()
        try:
            with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                yield call
        except Exception as error:
            span.set_attribute("error.type", type(error).__qualname__)
            span.set_status(StatusCode.ERROR, attrs.error_text(describe_error(error)))
            raise
        else:
            if call.reply is not None:
                span.set_attributes(attrs.chat_end(call.reply, self._capture))
        finally:
            span.end()

    def tools(self, step: int, calls: Sequence[Ready], jobs: list[Job]) -> list[Job]:
        return [
            functools.partial(self._tool, step, ready, job)
            for ready, job in zip(calls, jobs, strict=True)
        ]

    def _tool(self, step: int, ready: Ready, job: Job) -> Outcome:
        """One tool call's span; a call that failed (``Error: ...``) is an error."""
        span = self._tracer.start_span(
            f"execute_tool {ready.tool.name}",
            context=self._inside(),
            kind=SpanKind.INTERNAL,
            attributes=attrs.tool_start(ready, step, self._capture),
        )
        try:
            with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                outcome = job()
            span.set_attributes(attrs.tool_end(outcome.observation, self._capture))
            failure = attrs.tool_error(outcome.observation)
            if failure is not None:
                span.set_attribute("error.type", failure)
                span.set_status(StatusCode.ERROR, attrs.error_text(outcome.observation))
            return outcome
        finally:
            span.end()


class TracedModel:
    """A model each of whose calls is a ``chat`` span of the run's current step."""

    def __init__(self, inner: Model, spans: RunSpans) -> None:
        self.inner, self._spans = inner, spans
        self.name = inner.name
        self.supports_stop = inner.supports_stop
        self.supports_grammar = inner.supports_grammar
        self.supports_tools = inner.supports_tools

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        with self._spans.chat(request) as call:
            call.reply = reply = self.inner.complete(request, on_text)
        return reply

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        acomplete = getattr(self.inner, "acomplete", None)
        with self._spans.chat(request) as call:
            if acomplete is None:  # a hand-written model with only ``complete``
                reply = await asyncio.to_thread(self.inner.complete, request, on_text)
            else:
                reply = await acomplete(request, on_text)
            call.reply = reply
        return reply
