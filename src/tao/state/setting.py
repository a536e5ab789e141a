"""One declaration per run setting: what a :class:`~tao.state.config.RunConfig` field carries.

A setting is a RunConfig field made with :func:`setting`: its default, and a
:class:`Setting` spec in the field's metadata (its range or choices, its command-line
flag and help, which commands show it). Everything else is derived from that one
declaration, so it cannot drift:

- RunConfig's own checks (:func:`refuse_bad`), in the words below;
- the click options of ``tao run`` and ``tao eval``, their types, ranges, defaults and help
  (:mod:`tao.cli.settings`), and how their values become the field's;
- the :class:`~tao.state.budget.Budget` (built from the fields of the same names);
- the settings that name a file or folder, stored absolute (:func:`path_settings`).

    max_steps: int = setting(8, Setting(flag="--max-steps", minimum=1, help="Replies at most."))

Standard library only, and nothing of tao: the spec is data that the CLI reads.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, TypeVar

#: How a command-line value becomes the field's: as click parsed it (``value``), names split
#: at commas (``list``), a path stored absolute (``folder``, ``file``), or a JSON Schema read
#: from a file (``schema``).
Kind = Literal["value", "list", "folder", "file", "schema"]
#: The commands that show settings as options (``tao serve`` shows none: a server has no run;
#: ``tao resume`` only those the run log does not record, since a resumed run keeps the rest).
Command = Literal["run", "eval", "resume"]
T = TypeVar("T")

_KEY = "tao.setting"


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    """How ``tao eval`` shows a setting where it differs from ``tao run``: its own wording,
    a tighter lower bound, or no default (the command then decides, e.g. per benchmark)."""

    help: str | None = None
    minimum: int | None = None
    no_default: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Setting:
    """The spec of one setting, read by RunConfig's checks and by the CLI."""

    flag: str | None = None
    """The long option (``--max-steps``); ``None``: the setting has no option (library only)."""
    short: str | None = None
    """A short option too (``-m``)."""
    help: str = ""
    """The option's help; ``{model_forms}`` and ``{tool_sets}`` are filled in by the CLI."""
    minimum: int | None = None
    """The smallest value allowed (``must be at least``)."""
    above: int | None = None
    """A bound the value must exceed (``must be positive`` for 0)."""
    choices: tuple[str, ...] = ()
    """The values allowed (each item's, for a repeatable setting)."""
    any_case: bool = False
    """The command line takes a choice in any case (``--sandbox REQUIRE``)."""
    pattern: str | None = None
    """A regular expression every item must match in full, described by ``pattern_says``."""
    pattern_says: str = ""
    kind: Kind = "value"
    repeatable: bool = False
    """The option may be given several times; the field is a tuple."""
    metavar: str | None = None
    envvar: str | None = None
    """The environment variable the option falls back to (``TAO_MODEL``)."""
    command_default: str | None = None
    """What the command line uses when the option is absent, if not the field's default
    (``--project`` is the current folder, stored absolute)."""
    run: bool = True
    """``tao run`` shows it (when it has a ``flag``)."""
    eval: Variant | None = None
    """``tao eval`` shows it too, as this variant."""
    recorded: bool = True
    """The run log records it. ``False``: a person's word for this process only (trusting a
    policy file inside the project), never written and never read back, so a run the model
    could have changed meanwhile is not trusted on the strength of an earlier say-so:
    ``tao resume`` and ``tao run --continue`` must be given it again."""
    resume: bool = False
    """``tao resume`` shows it too; only for a setting that is not ``recorded``."""

    def problem(self, name: str, value: object) -> str | None:
        """Why ``value`` cannot be this setting's, in the words RunConfig raises; ``None``: fine."""
        if value is None:
            return None
        items = value if self.repeatable and isinstance(value, tuple) else (value,)
        for item in items:
            if self.choices and item not in self.choices:
                allowed = _alternatives(self.choices)
                if self.repeatable:
                    return f"{name} takes only {allowed}, not {value!r}"
                return f"{name} must be {allowed}, not {value!r}"
            if (mismatch := self.mismatch(item)) is not None:
                return f"{name}: {mismatch}"
        if self.minimum is not None and value < self.minimum:  # type: ignore[operator]
            return f"{name} must be at least {self.minimum:g}"
        if self.above is not None and not value > self.above:  # type: ignore[operator]
            bound = "positive" if self.above == 0 else f"more than {self.above:g}"
            return f"{name} must be {bound}"
        return None

    def mismatch(self, item: object) -> str | None:
        """Why one item does not match the setting's pattern (the CLI says it alone)."""
        if self.pattern is None or re.fullmatch(self.pattern, str(item)):
            return None
        return f"{item!r} is not {self.pattern_says}"

    def commands(self) -> tuple[Command, ...]:
        """The commands whose options include this setting."""
        if self.flag is None:
            return ()
        shown: tuple[tuple[Command, bool], ...] = (
            ("run", self.run),
            ("eval", self.eval is not None),
            ("resume", self.resume),
        )
        return tuple(command for command, shows in shown if shows)


def setting(default: T, spec: Setting | None = None) -> T:
    """A RunConfig field: its default, and its spec (none: a setting of the library only)."""
    field: T = dataclasses.field(default=default, metadata={_KEY: spec or Setting()})
    return field


def settings_of(config: object) -> Iterator[tuple[dataclasses.Field[object], Setting]]:
    """Each field made with :func:`setting`, with its spec, in declaration order."""
    for field in dataclasses.fields(config):  # type: ignore[arg-type]
        spec = field.metadata.get(_KEY)
        if isinstance(spec, Setting):
            yield field, spec


def refuse_bad(config: object) -> None:
    """Raise ``ValueError`` for the first setting whose value its spec refuses."""
    for field, spec in settings_of(config):
        problem = spec.problem(field.name, getattr(config, field.name))
        if problem is not None:
            raise ValueError(problem)


def unrecorded(config: object) -> frozenset[str]:
    """The settings the run log neither writes nor reads back (:attr:`Setting.recorded`)."""
    return frozenset(f.name for f, spec in settings_of(config) if not spec.recorded)


def path_settings(config: object) -> tuple[str, ...]:
    """The settings that name a file or folder: stored absolute, so a resume finds them."""
    return tuple(f.name for f, spec in settings_of(config) if spec.kind in ("folder", "file"))


def _alternatives(choices: tuple[str, ...]) -> str:
    """``auto, text or native``."""
    return choices[0] if len(choices) == 1 else f"{', '.join(choices[:-1])} or {choices[-1]}"
