"""A tao plugin, as a third party would write it, on tao's public interfaces only.

``--model shout:WORD`` is a scripted model: it asks ``shout[WORD]``, then answers with what
the tool said. ``--model shout:engrave`` asks ``engrave[...]`` instead, a call with effects,
so the run pauses for approval and can be resumed. ``--tools shout`` gives both tools.
"""

from __future__ import annotations

import re

from tao import tool
from tao.models import ModelReply, ModelRequest, OnText
from tao.models.bridge import SyncFirstModel


@tool
def shout(text: str) -> str:
    """Say the text louder."""
    return text.upper() + "!"


@tool(effects="writes")
def engrave(text: str) -> str:
    """Engrave the text in stone (a side effect: a person approves it first)."""
    return f"engraved {text!r}"


def shout_tools() -> list[object]:
    return [shout, engrave]


NOT_TOOLS = 42


@tool(name="finish")
def my_finish(text: str) -> str:
    """Takes the loop's own name: refused."""
    return text


def finish_tools() -> list[object]:
    return [shout, my_finish]


def make_nothing(rest: str, **options: str) -> object:
    """Gives something that is not a Model."""
    return 42


def make_trouble(rest: str, **options: str) -> object:
    raise RuntimeError(f"no model called {rest!r} here\nsecond line never shown")


class ShoutModel(SyncFirstModel):
    supports_stop = False
    supports_grammar = False
    supports_tools = False

    def __init__(self, word: str, base_url: str | None = None) -> None:
        self.name = f"shout:{word}"
        self.word = word or "hi"
        self.base_url = base_url

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        asked = sum(message.get("role") == "assistant" for message in request.messages)
        if asked == 0:
            tool_name = "engrave" if self.word == "engrave" else "shout"
            text = f"Thought: I will use the plugin's tool.\nAction: {tool_name}[{self.word}]"
        else:
            said = re.sub(r"<[^>]*>", " ", str(request.messages[-1].get("content") or ""))
            heard = " ".join(said.split("Observation:")[-1].split())
            text = f"Thought: the tool answered.\nFinal Answer: the plugin heard {heard}"
        if on_text is not None:
            on_text(text)
        return ModelReply(text=text, input_tokens=10, output_tokens=10, finish_reason="stop")


def make_model(rest: str, **options: str) -> ShoutModel:
    return ShoutModel(rest, base_url=options.get("base_url"))
