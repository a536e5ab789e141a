"""What a library user imports: ``from tao import ...`` (SPEC L1).

The stream's event types are part of the API: a user matching on them must not have
to know they live in ``tao.events``.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import tao
import tao.events


def test_every_event_type_is_exported_from_tao() -> None:
    classes = {
        name
        for name, value in vars(tao.events).items()
        if inspect.isclass(value) and value.__module__ == "tao.events" and not name.startswith("_")
    }
    assert classes, "tao.events defines no event classes?"
    for name in [*sorted(classes), "Event"]:
        assert name in tao.__all__, name
        assert getattr(tao, name) is getattr(tao.events, name)


def test_each_event_a_run_streams_is_a_tao_export(tmp_path: Path) -> None:
    from tao import Agent, FinalEvent

    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["Action: calculator[6 * 7]", "Action: finish[42]"]))
    agent = Agent(f"replay:{script}", ["calc"], record=False)
    events = list(agent.stream("6 * 7?"))
    kinds = {type(event).__name__ for event in events}
    assert {"ActionEvent", "ObservationEvent", "FinalEvent"} <= kinds
    assert kinds <= set(tao.__all__)
    assert isinstance(events[-1], FinalEvent) and events[-1].result.answer == "42"
