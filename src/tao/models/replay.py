"""A scripted model: replies come from a JSON file, one per call (SPEC M1).

Replays make runs reproducible without a model: tests, demos, bug reports.
The backend ignores ``stop`` on purpose, like many real servers, so the
loop's client-side cut (SPEC L3) is exercised on every replayed reply.

    replies.json: ["Thought: add.\\nAction: calculator[2+2]", "Action: finish[4]"]
    tao run "What is 2+2?" --model replay:replies.json --tools calc
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tao.errors import ModelError, ModelSpecError
from tao.models.base import Completion, Message


def estimate_tokens(text: str) -> int:
    """A rough token count (4 characters a token) for backends that report none."""
    return (len(text) + 3) // 4


class ReplayModel:
    """Answers each call with the next reply of a JSON array of strings."""

    supports_stop = False
    supports_grammar = False

    def __init__(self, path: Path) -> None:
        self.name = f"replay:{path}"
        self.path = path
        self.replies = _load(path)
        self.calls = 0

    def complete(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        max_tokens: int | None = None,
        grammar: str | None = None,
    ) -> Completion:
        if self.calls >= len(self.replies):
            raise ModelError(
                f"replay script {self.path} has no reply left for model call {self.calls + 1} "
                f"(it holds {len(self.replies)})"
            )
        text = self.replies[self.calls]
        self.calls += 1
        prompt = "".join(m.get("content", "") for m in messages)
        return Completion(
            text, estimate_tokens(prompt), estimate_tokens(text), finish_reason="stop"
        )


def _load(path: Path) -> list[str]:
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
    if not isinstance(data, list) or not all(isinstance(r, str) for r in data):
        raise ModelSpecError(f"replay file {path} must hold a JSON array of reply strings")
    return data
