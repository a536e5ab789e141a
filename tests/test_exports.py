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


def test_every_error_class_is_exported_and_raised_issue_29() -> None:
    """The public error tree holds only what tao raises: each class in ``tao.errors`` is
    exported from ``tao`` and is built somewhere in ``src/tao`` (``raise X(...)``, or a
    helper returning one), or is the base of one that is. A class that nothing raises
    would invite ``except`` clauses that never fire."""
    import ast

    import tao.errors

    classes = {
        name: value
        for name, value in vars(tao.errors).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == "tao.errors"
    }
    assert {"TaoError", "StateError", "InternalError"} <= set(classes)
    for name in classes:
        assert name in tao.__all__, name
        assert getattr(tao, name) is classes[name]
    built: set[str] = set()
    bases: dict[str, set[str]] = {}  # every class in src/tao -> the names of its bases
    src = Path(tao.__file__).parent
    for path in src.rglob("*.py"):
        in_errors = path == src / "errors.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and not in_errors:
                func = node.func
                built.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {
                    getattr(base, "id", getattr(base, "attr", "")) for base in node.bases
                }

    def descends(name: str, ancestor: str) -> bool:
        return name == ancestor or any(descends(b, ancestor) for b in bases.get(name, ()))

    unraised = [name for name in classes if not any(descends(b, name) for b in built)]
    assert unraised == []
