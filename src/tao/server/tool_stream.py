"""A tools reply streamed as OpenAI streams it: content pieces, then the call's pieces.

With ``tools`` and ``stream: true``, the model's text comes a token at a time, but a
client wants what a tool-calling model sends: ``delta.content`` for prose, and for a call
``delta.tool_calls`` pieces under one ``index``, the first with its ``id``, ``type`` and
``function.name``, the next ones with pieces of ``function.arguments`` that add up to the
arguments' JSON (the SDK's stream helpers concatenate them). :class:`ToolStream` reads
the text as it comes:

* a reply that begins with ``{`` or ``<`` is a call (the grammar of
  :mod:`tao.protocol.hermes` allows nothing else to begin so): nothing of it is content;
  the call is announced once its name is written, then its arguments go out as written;
* any other reply is content, sent as it comes, up to where a call begins
  (:func:`tao.protocol.hermes.call_start`: the grammar allows one call after text, tagged
  or bare), where the call's pieces begin; a tail that may begin a call (``<tool``,
  ``{"na``) waits for the next piece. For a model that is not held by the grammar, only
  a ``<tool_call>`` tag begins a call in a stream, and text from a fenced block on is held
  back too, as it may be a call the lenient reading takes.

:meth:`ToolStream.finish` reconciles the pieces with the reply as
:func:`tao.server.tool_prompt.read_tool_calls` reads it whole, so a stream and a plain
answer to the same reply carry the same content and calls.

    stream = ToolStream(in_text=True, constrained=True)
    for piece in pieces: deltas = stream.feed(piece)
    deltas = stream.finish(reply)
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable

from tao.models.base import ToolCallMessage
from tao.protocol.hermes import OPEN, call_start, held_tail
from tao.server.wire import Delta, ToolCallDelta

__all__ = ["ToolStream"]

_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGUMENTS = re.compile(r'"(?:arguments|parameters)"\s*:\s*(?=\S)')
#: Where a call may begin inside text, for a model the grammar does not hold.
_CALL_STARTS = (OPEN, "```")


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


class _Arguments:
    """Finds the end of a JSON value written a character at a time (strings and nesting
    counted), so the arguments are sent as written and nothing after them."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.done = False

    def take(self, text: str) -> str:
        """The part of ``text`` that still belongs to the value."""
        for at, char in enumerate(text):
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif char == "\\":
                    self.escaped = True
                elif char == '"':
                    self.in_string = False
                    if self.depth <= 0:  # the value was a string
                        self.done = True
                        return text[: at + 1]
            elif char == '"':
                self.in_string = True
            elif char in "{[":
                self.depth += 1
            elif char in "}]":
                self.depth -= 1
                if self.depth <= 0:
                    self.done = True
                    return text[: at + 1]
        return text


class ToolStream:
    """One streamed tools reply: text pieces in, OpenAI deltas out; see the module."""

    def __init__(
        self, *, in_text: bool, constrained: bool, new_id: Callable[[], str] = _new_id
    ) -> None:
        #: Calls are written in the text (tools given in the prompt); else all text is
        #: content and the calls (a native tool-calling model's) come whole at the end.
        self.in_text = in_text
        self.constrained = constrained
        self.new_id = new_id
        self.text = ""
        self.mode: str | None = None  # None until the first visible character, then text|call
        self.sent_content = ""
        #: The streamed call: its id once announced, and the arguments sent so far.
        self.call_id: str | None = None
        self.sent_arguments = ""
        self._arguments_at: int | None = None
        self._call_from = 0  # where the call begins in the text
        self._scan = _Arguments()

    def feed(self, piece: str) -> list[Delta]:
        """The deltas ``piece`` makes sendable (often none while a call is being written)."""
        self.text += piece
        if self.mode is None:
            visible = self.text.lstrip()
            if not visible:
                return []
            self.mode = "call" if self.in_text and visible[0] in "{<" else "text"
        return self._call() if self.mode == "call" else self._content()

    def _content(self) -> list[Delta]:
        sendable, begins = self.text, -1
        if self.in_text and self.constrained:
            begins = call_start(self.text)
            sendable = self.text[:begins] if begins >= 0 else _less_tail(self.text)
        elif self.in_text:
            begins = self.text.find(OPEN)
            sendable = _before_call(self.text, _CALL_STARTS)
        if self.in_text:  # blanks held until text follows
            sendable = sendable.rstrip()
        deltas: list[Delta] = []
        if len(sendable) > len(self.sent_content):
            deltas.append({"content": sendable[len(self.sent_content) :]})
            self.sent_content = sendable
        if begins >= 0:  # the text ends; its call begins
            self.mode, self._call_from = "call", begins
            deltas += self._call()
        return deltas

    def _call(self) -> list[Delta]:
        deltas: list[Delta] = []
        if self.call_id is None:
            name = _NAME.search(self.text, self._call_from)
            if name is None:
                return []
            arguments = _ARGUMENTS.search(self.text, self._call_from)
            if arguments is not None and arguments.start() < name.start():
                return []  # arguments before the name: sent whole at the end
            self.call_id = self.new_id()
            announced = json.loads(f'"{name.group(1)}"')
            deltas.append({"tool_calls": [self._announce(0, self.call_id, announced)]})
        if self._arguments_at is None:
            found = _ARGUMENTS.search(self.text, self._call_from)
            if found is None:
                return deltas
            self._arguments_at = found.end()
        if not self._scan.done:
            unread = self.text[self._arguments_at + len(self.sent_arguments) :]
            piece = self._scan.take(unread)
            if piece:
                self.sent_arguments += piece
                deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        return deltas

    @staticmethod
    def _announce(index: int, call_id: str, name: str, arguments: str = "") -> ToolCallDelta:
        return {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }

    def finish(self, content: str | None, calls: list[ToolCallMessage]) -> list[Delta]:
        """What is left to send once the whole reply is read as ``(content, calls)``; a call
        cut short (``max_tokens``) stays as far as it was sent, as OpenAI leaves it."""
        deltas: list[Delta] = []
        if self.call_id is not None and not calls:
            return deltas
        if content and content.startswith(self.sent_content) and content != self.sent_content:
            deltas.append({"content": content[len(self.sent_content) :]})
        for index, call in enumerate(calls):
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            if index == 0 and self.call_id is not None:
                rest = arguments[len(self.sent_arguments) :]
                if rest and arguments.startswith(self.sent_arguments):
                    deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": rest}}]})
                continue
            deltas.append({"tool_calls": [self._announce(index, self.new_id(), name, arguments)]})
        return deltas


def _less_tail(text: str) -> str:
    """``text`` less a tail that may begin a call."""
    return text[: len(text) - held_tail(text)]


def _before_call(text: str, starts: tuple[str, ...]) -> str:
    """``text`` up to where a call may begin, less a tail that may begin one."""
    for start in starts:
        if start in text:
            text = text[: text.index(start)]
    for start in starts:
        for size in range(len(start) - 1, 0, -1):
            if text.endswith(start[:size]):
                return text[:-size]
    return text
