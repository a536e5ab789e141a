"""A chat server with a small context window, for long-run tests and the bench (issue 27).

An OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1 that counts a request's
tokens as a provider would (four characters a token, four a message, plus the reply's
``max_tokens``) and refuses one that does not fit with the real error body of a provider:
OpenAI's ``context_length_exceeded``, Anthropic's ``prompt is too long``, or Gemini's
``INVALID_ARGUMENT`` (each as its SDK receives it, status 400). Whatever fits is answered
by a script: read file 1, read file 2, ... then finish, in the text protocol (Thought /
Action lines) or with native tool calls. The step a request is for is read from it (the
newest reply it holds says ``step N``), so a resumed run is answered where it stands; at
``recall_at`` the script asks ``recall`` for step 1 instead of reading, and a summary
request (compaction's ``summarize``) is answered with :data:`SUMMARY`.

    with WindowServer(window=6000, shape="anthropic", reads=60) as server:
        Agent("openai:scripted", base_url=server.base_url, ...)
        server.refused  # how many requests did not fit
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Literal

from tests.fakes.http import FakeServer, Reply, Request, chat_completion, streamed_chat

Shape = Literal["openai", "anthropic", "gemini"]
#: What a summary request is answered with.
SUMMARY = "SUMMARY: files were read in order; nothing is open."
_STEP = re.compile(r"step (\d+)")


def step_of(body: dict[str, Any]) -> int:
    """The step a request is for: one after the newest reply it holds (1 if none)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            return int(call["id"].removeprefix("call_")) + 1
        found = _STEP.search(str(message.get("content") or ""))
        if found is not None:
            return int(found.group(1)) + 1
    return 1


def prompt_tokens(body: dict[str, Any]) -> int:
    """The request's prompt in tokens, as the server counts them."""
    total = 0
    for message in body.get("messages", []):
        chars = len(str(message.get("content") or ""))
        for call in message.get("tool_calls") or ():
            chars += len(json.dumps(call))
        total += chars // 4 + 4
    return total


def refusal(shape: Shape, window: int, tokens: int) -> dict[str, Any]:
    """The body a provider answers an oversize request with (status 400)."""
    if shape == "openai":
        return {
            "error": {
                "message": f"This model's maximum context length is {window} tokens. However, "
                f"your messages resulted in {tokens} tokens. Please reduce the length of the "
                "messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    if shape == "anthropic":
        return {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": f"prompt is too long: {tokens} tokens > {window} maximum",
            },
        }
    return {
        "error": {
            "code": 400,
            "message": f"The input token count ({tokens}) exceeds the maximum number of tokens "
            f"allowed ({window}).",
            "status": "INVALID_ARGUMENT",
        }
    }


class WindowServer(FakeServer):
    """Reads files ``1..reads`` one a step, then finishes; refuses what does not fit."""

    def __init__(
        self,
        *,
        window: int,
        shape: Shape = "openai",
        reads: int = 60,
        native: bool = False,
        recall_at: int | None = None,
        hold_at: int | None = None,
        files: bool = False,
        says_window: bool = False,
    ) -> None:
        super().__init__(self._answer, prefix="/v1", model_info=says_window)
        self.window, self.shape, self.reads, self.native = window, shape, reads, native
        self.recall_at, self.hold_at = recall_at, hold_at
        #: Read with the built-in ``read_file`` (``f01.txt``…) instead of a ``read(n)`` tool.
        self.files = files
        #: Set when the request for step ``hold_at`` arrives; it is answered once ``release``
        #: is set (a test kills its client in between).
        self.holding, self.release = threading.Event(), threading.Event()
        self.answered = 0
        self.refused = 0
        #: The summary requests answered.
        self.summaries = 0
        #: Every request that fitted, in order, as its JSON body.
        self.fitted: list[dict[str, Any]] = []
        #: The prompt tokens of each request that fitted.
        self.sizes: list[int] = []
        self._lock = threading.Lock()

    def _answer(self, request: Request) -> Reply:
        if request.method == "GET":  # ``says_window``: the model's window, as vLLM lists it
            return Reply.json({"data": [{"id": "scripted", "max_model_len": self.window}]})
        body = request.body
        with self._lock:
            tokens = prompt_tokens(body)
            if tokens + int(body.get("max_tokens") or 0) > self.window:
                self.refused += 1
                return Reply.json(refusal(self.shape, self.window, tokens), 400)
            if str(body["messages"][0].get("content", "")).startswith("You compact"):
                self.summaries += 1
                return _text(SUMMARY, body)
            self.answered += 1
            self.fitted.append(body)
            self.sizes.append(tokens)
            step = step_of(body)
        if step == self.hold_at and not self.release.is_set():
            self.holding.set()
            self.release.wait(30)
        if step == self.recall_at:
            return self._reply(body, "recall", {"step": 1}, step)
        if step > self.reads:
            return self._reply(body, "finish", {"answer": f"read {self.reads} files"}, step)
        if self.files:
            return self._reply(body, "read_file", {"path": f"f{step:02d}.txt"}, step)
        return self._reply(body, "read", {"n": step}, step)

    def _reply(
        self, body: dict[str, Any], tool: str, arguments: dict[str, Any], step: int
    ) -> Reply:
        if not self.native:
            value = next(iter(arguments.values()))
            text = f"Thought: step {step}.\nAction: {tool}[{value}]"
            if tool == "finish":
                text = f"Thought: I read them all.\nFinal Answer: {value}"
            return _text(text, body)
        reply = chat_completion("", body)
        reply["choices"][0]["message"] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{step}",
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps(arguments)},
                }
            ],
        }
        reply["choices"][0]["finish_reason"] = "tool_calls"
        return Reply.json(reply)


def _text(text: str, body: dict[str, Any]) -> Reply:
    """A text reply, streamed as the SDK asked (``Agent.stream``) or whole."""
    if body.get("stream"):
        return Reply.sse(streamed_chat([text], body))
    return Reply.json(chat_completion(text, body))


def dropped(span: Any) -> list[dict[str, str]]:
    """A custom compaction policy (``--compaction tests.fakes.window:dropped``): a span of
    old steps becomes one line naming them."""
    return [{"role": "user", "content": f"[dropped steps {span.first_step}-{span.last_step}]"}]
