"""A scripted model: replies come from a JSON file, one per call (SPEC M1).

Replays make runs reproducible without a model: tests, demos, bug reports.
The backend ignores ``stop`` on purpose, like many real servers, so the
loop's client-side cut (SPEC L3) is exercised on every replayed reply.

    replies.json: ["Thought: add.\\nAction: calculator[2+2]", "Action: finish[4]"]
    tao run "What is 2+2?" --model replay:replies.json --tools calc

A reply may also be an object with native tool calls, which makes the script
a native tool-calling model (``--protocol native``):

    {"content": "I will add.",
     "tool_calls": [{"name": "calculator", "arguments": {"expression": "2+2"}}]}
"""

from __future__ import annotations

import json
from pathlib import Path

from tao.errors import ModelError, ModelSpecError
from tao.models.base import ModelReply, ModelRequest, OnText, ToolCall
from tao.models.bridge import SyncFirstModel
from tao.state.jsontypes import JSON


def estimate_tokens(text: str) -> int:
    """A rough token count (4 characters a token) for backends that report none."""
    return (len(text) + 3) // 4


class ReplayModel(SyncFirstModel):
    """Answers each call with the next reply of a JSON array."""

    supports_stop = False
    supports_grammar = False

    def __init__(self, path: Path) -> None:
        self.name = f"replay:{path}"
        self.path = path
        self.replies = _load(path)
        self.supports_tools = any(r.tool_calls for r in self.replies)
        self.calls = 0

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        if self.calls >= len(self.replies):
            raise ModelError(
                f"replay script {self.path} has no reply left for model call {self.calls + 1} "
                f"(it holds {len(self.replies)})"
            )
        reply = self.replies[self.calls]
        self.calls += 1
        if on_text is not None and reply.text:
            on_text(reply.text)
        prompt = "".join(str(m.get("content") or "") for m in request.messages)
        return ModelReply(
            text=reply.text,
            input_tokens=estimate_tokens(prompt),
            output_tokens=estimate_tokens(
                reply.text + json.dumps([c.arguments for c in reply.tool_calls])
            ),
            finish_reason="tool_calls" if reply.tool_calls else "stop",
            tool_calls=reply.tool_calls,
        )

    def advance_to(self, calls: int) -> None:
        """Skip the replies a resumed run already consumed in an earlier process."""
        self.calls = max(self.calls, calls)


def from_spec(rest: str, /, **options: str) -> ReplayModel:
    """``replay:PATH``: the script at ``rest`` (a server or key in ``options`` is unused)."""
    return ReplayModel(Path(rest))


class _Reply:
    __slots__ = ("text", "tool_calls")

    def __init__(self, text: str, tool_calls: tuple[ToolCall, ...] = ()) -> None:
        self.text = text
        self.tool_calls = tool_calls


def _load(path: Path) -> list[_Reply]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelSpecError(f"replay file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ModelSpecError(f"cannot read replay file {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise ModelSpecError(
            f"replay file {path} is not valid JSON (line {error.lineno}, column {error.colno}): "
            f"{error.msg}"
        ) from None
    except RecursionError:
        raise ModelSpecError(f"replay file {path} nests its JSON too deeply") from None
    except ValueError as error:  # an integer of thousands of digits, and the like
        raise ModelSpecError(
            f"replay file {path} holds a value tao will not read ({error})"
        ) from None
    if not isinstance(data, list):
        raise ModelSpecError(f"replay file {path} must hold a JSON array of reply strings")
    return [_reply(item, path, number) for number, item in enumerate(data, 1)]


def _reply(item: JSON, path: Path, number: int) -> _Reply:
    if isinstance(item, str):
        return _Reply(item)
    if isinstance(item, dict):
        content, calls = item.get("content"), item.get("tool_calls") or []
        if isinstance(content, str | None) and isinstance(calls, list):
            tool_calls = [_tool_call(call, f"call_{number}_{i}") for i, call in enumerate(calls)]
            if all(tool_calls):
                return _Reply(content or "", tuple(c for c in tool_calls if c is not None))
    raise ModelSpecError(
        f"replay file {path}, reply {number}: must be a string or "
        '{"content": str, "tool_calls": [{"name": str, "arguments": {...}}]}'
    )


def _tool_call(call: JSON, default_id: str) -> ToolCall | None:
    """One scripted call, ``{"name": str, "arguments": {...}, "id"?: str}``; None if malformed."""
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None
    arguments = call.get("arguments", {})
    return ToolCall(
        id=str(call.get("id") or default_id),
        name=str(call["name"]),
        arguments=arguments if isinstance(arguments, dict) else {},
        raw_arguments=json.dumps(arguments, ensure_ascii=False),
    )
