"""The ReAct paper's own few-shot prompts, read from its ``react_prompts/`` folder.

HotpotQA uses the 6-shot sets of ``prompts_naive.json`` (``webthink_simple6``,
``cotqa_simple6``, ``webact_simple6``, ``webqa_simple6``) and the instruction in
``hotpotqa_instruction.txt``; FEVER the 3-shot sets of ``fever.json`` (whose
examples carry their own instruction). The examples become the system prompt;
the question is the first user turn, labelled ``Question:`` or ``Claim:``.

    prompts = load_prompts(Path("react_prompts"), "hotpotqa")
    prompts.system("react")   # instruction + webthink_simple6
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tao.errors import ConfigError
from tao.jsontypes import JSON

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


class PromptsError(ConfigError):
    """The paper's prompt folder is missing, or a file in it is malformed."""


@dataclass(frozen=True)
class PromptSet:
    """One benchmark's prompts: the few-shot examples per kind and the task label."""

    benchmark: str
    examples: dict[str, str]
    instruction: str
    task_label: str

    def system(self, kind: PromptKind) -> str:
        """The system prompt of a strategy: (instruction +) the paper's examples.

        Standard and CoT end with one line saying to answer like the examples: the
        paper prompted a completion model, which writes the ``Answer:`` label itself,
        where a chat model would just reply with the bare answer.
        """
        examples = self.examples[kind].strip("\n")
        if kind in _ANSWER_FORMAT:
            return f"{examples}\n\n{_ANSWER_FORMAT[kind].format(label=self.task_label)}"
        if self.benchmark != "hotpotqa":
            return examples
        instruction = self.instruction.strip()
        if kind == "act":  # the same instruction, without the thoughts Act does not write
            instruction = instruction.replace(
                _THOUGHT_CLAUSE, "interleaving Action, Observation steps. Action"
            )
        return f"{instruction}\n{examples}"


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
