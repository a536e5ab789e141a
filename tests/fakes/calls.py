"""A tool call validated as the loop validates it, for tests of what a prepared call holds."""

from __future__ import annotations

from tao.run.act import prepare
from tao.state.calls import Call, Ready
from tao.tools.base import Tool


def ready(tool: Tool, **arguments: object) -> Ready:
    """Validate as the loop does: the path is resolved once, here."""
    outcome = prepare(Call(tool.name, "", "native", dict(arguments)), {tool.name: tool})  # type: ignore[arg-type]
    assert isinstance(outcome, Ready), outcome
    return outcome
