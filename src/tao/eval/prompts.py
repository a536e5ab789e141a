"""The ReAct paper's own few-shot prompts, read from its ``react_prompts/`` folder.

HotpotQA uses the 6-shot sets of ``prompts_naive.json`` (``webthink_simple6``,
``cotqa_simple6``, ``webact_simple6``, ``webqa_simple6``) and the instruction in
``hotpotqa_instruction.txt``; FEVER the 3-shot sets of ``fever.json`` (whose
examples carry their own instruction). The examples become the system prompt;
the question is the first user turn, labelled ``Question:`` or ``Claim:``.

A :class:`PromptStyle` cuts that prompt down for a small model: fewer of the
examples, and a closing reminder of the format and of when to finish. ``paper`` is
the paper's prompt exactly, for faithful reproduction; the default was picked by
exact match per second on ``questions_dev.jsonl`` only (``bench/prompt_styles.py``,
``docs/results.md``).

    prompts = load_prompts(Path("react_prompts"), "hotpotqa")
    prompts.system("react")                  # instruction + webthink_simple6
    prompts.system("react", STYLES["shots2-reminder"])
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tao.errors import ConfigError
from tao.state.jsontypes import JSON

#: How a strategy prompts: direct answer, reasoning, actions only, or both.
PromptKind = Literal["standard", "cot", "act", "react"]

_FILES = {"hotpotqa": "prompts_naive.json", "fever": "fever.json"}
_KEYS = {
    "hotpotqa": {
        "standard": "webqa_simple6",
        "cot": "cotqa_simple6",
        "act": "webact_simple6",
        "react": "webthink_simple6",
    },
    "fever": {
        "standard": "webqa_simple3",
        "cot": "cotqa_simple3",
        "act": "webact_simple3",
        "react": "webthink_simple3",
    },
}
INSTRUCTION_FILE = "hotpotqa_instruction.txt"
_THOUGHT_CLAUSE = (
    "interleaving Thought, Action, Observation steps. "
    "Thought can reason about the current situation, and Action"
)

#: The one line added to the paper's completion-style Standard and CoT prompts for chat models.
_ANSWER_FORMAT = {
    "standard": "Reply to the next {label} the way the examples do: one line 'Answer: ...'.",
    "cot": (
        "Reply to the next {label} the way the examples do: one line 'Thought: ...' "
        "with your reasoning, then one line 'Answer: ...'."
    ),
}


#: The reminder closing an acting prompt, per benchmark and kind: the format the examples
#: show, and the two habits a small model lacks (finish when it knows, do not repeat).
_REMINDERS = {
    ("hotpotqa", "react"): (
        "Answer the next Question the same way: one 'Thought N:' line, then one 'Action N:' "
        "line that is Search[entity], Lookup[keyword] or Finish[answer]. Finish as soon as "
        "an observation gives the answer; never repeat an action."
    ),
    ("hotpotqa", "act"): (
        "Answer the next Question the same way: one 'Action N:' line that is "
        "Search[entity], Lookup[keyword] or Finish[answer]. Finish as soon as an "
        "observation gives the answer; never repeat an action."
    ),
    ("fever", "react"): (
        "Judge the next Claim the same way: one 'Thought N:' line, then one 'Action N:' "
        "line that is Search[entity], Lookup[keyword] or Finish[SUPPORTS], "
        "Finish[REFUTES] or Finish[NOT ENOUGH INFO]. Finish as soon as you can; never "
        "repeat an action."
    ),
    ("fever", "act"): (
        "Judge the next Claim the same way: one 'Action N:' line that is Search[entity], "
        "Lookup[keyword] or Finish[SUPPORTS], Finish[REFUTES] or Finish[NOT ENOUGH INFO]. "
        "Finish as soon as you can; never repeat an action."
    ),
}


@dataclass(frozen=True)
class PromptStyle:
    """How much of the paper's prompt a strategy sends, and what is added to it."""

    name: str
    shots: int | None
    """The first this many of the paper's examples; ``None``: all of them."""
    reminder: bool
    """Close Act and ReAct prompts with a one-line reminder of the format and of when to
    finish (:data:`_REMINDERS`). Standard and CoT always close with their answer line."""


#: Every style ``--prompt`` accepts; ``paper`` is the paper's prompt, unchanged.
STYLES = {
    style.name: style
    for style in (
        PromptStyle("paper", None, reminder=False),
        PromptStyle("paper-reminder", None, reminder=True),
        PromptStyle("shots3", 3, reminder=False),
        PromptStyle("shots2-reminder", 2, reminder=True),
        PromptStyle("shots1-reminder", 1, reminder=True),
    )
}
PAPER = STYLES["paper"]


class PromptsError(ConfigError):
    """The paper's prompt folder is missing, or a file in it is malformed."""


@dataclass(frozen=True)
class PromptSet:
    """One benchmark's prompts: the few-shot examples per kind and the task label."""

    benchmark: str
    examples: dict[str, str]
    instruction: str
    task_label: str

    def system(self, kind: PromptKind, style: PromptStyle = PAPER) -> str:
        """The system prompt of a strategy: (instruction +) the paper's examples.

        Standard and CoT end with one line saying to answer like the examples: the
        paper prompted a completion model, which writes the ``Answer:`` label itself,
        where a chat model would just reply with the bare answer.
        """
        examples = self.shots(kind, style.shots)
        if kind in _ANSWER_FORMAT:
            return f"{examples}\n\n{_ANSWER_FORMAT[kind].format(label=self.task_label)}"
        reminder = f"\n\n{_REMINDERS[self.benchmark, kind]}" if style.reminder else ""
        if self.benchmark != "hotpotqa":
            return examples + reminder
        instruction = self.instruction.strip()
        if kind == "act":  # the same instruction, without the thoughts Act does not write
            instruction = instruction.replace(
                _THOUGHT_CLAUSE, "interleaving Action, Observation steps. Action"
            )
        return f"{instruction}\n{examples}{reminder}"

    def shots(self, kind: PromptKind, count: int | None) -> str:
        """The paper's examples of ``kind``, only the first ``count`` of them if given;
        what comes before the first (FEVER's instruction) is kept."""
        text = self.examples[kind].strip("\n")
        if count is None:
            return text
        starts = [m.start() for m in re.finditer(rf"(?m)^{self.task_label}:", text)]
        if len(starts) <= count:
            return text
        return text[: starts[count]].rstrip("\n")


def find_prompts_dir(*near: Path) -> Path:
    """``react_prompts/`` beside or one level above any of ``near`` (the questions, corpus)."""
    for place in near:
        for folder in (place.parent, place.parent.parent):
            candidate = folder / "react_prompts"
            if (candidate / _FILES["hotpotqa"]).is_file():
                return candidate
    raise PromptsError(
        "cannot find the paper's prompts (a react_prompts/ folder with "
        f"{_FILES['hotpotqa']} and {_FILES['fever']}) beside the questions or corpus; "
        "pass --prompts DIR"
    )


def load_prompts(folder: Path, benchmark: str) -> PromptSet:
    """Read ``benchmark``'s prompts from ``folder``; errors name the file and the key."""
    path = folder / _FILES[benchmark]
    try:
        data: JSON = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PromptsError(f"prompt file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise PromptsError(f"cannot read prompt file {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise PromptsError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None
    if not isinstance(data, dict):
        raise PromptsError(f"{path}: must hold a JSON object of named prompts")
    examples: dict[str, str] = {}
    for kind, key in _KEYS[benchmark].items():
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise PromptsError(f"{path}: has no prompt {key!r} (needed for {kind})")
        examples[kind] = value
    instruction = ""
    if benchmark == "hotpotqa":
        instruction_path = folder / INSTRUCTION_FILE
        try:
            instruction = instruction_path.read_text(encoding="utf-8")
        except OSError:
            raise PromptsError(f"instruction file not found: {instruction_path}") from None
    label = "Question" if benchmark == "hotpotqa" else "Claim"
    return PromptSet(benchmark, examples, instruction, label)
