"""Label sets for the text protocol, one per language (SPEC L8).

Changing language is choosing a :class:`Labels`; the parser, the prompts and
the grammar all read from it, so nobody edits a regular expression.

    >>> LABELS["sv"].action
    'Handling'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Labels:
    """The four words of the protocol in one language, plus prompt phrasing."""

    code: str
    thought: str
    action: str
    observation: str
    answer: str
    task: str
    #: Every way the language writes "final answer"; the first is the canonical one.
    answer_aliases: tuple[str, ...] = ()

    @property
    def answer_words(self) -> tuple[str, ...]:
        return (self.answer, *self.answer_aliases)

    @cached_property
    def stop(self) -> tuple[str, ...]:
        """Stop sequences: the model must not write its own Observation (SPEC L3)."""
        return (f"{self.observation}:", f"{self.observation}：")


#: The aliases are the other ways models write "final answer" in each language, longest first
#: where one ends another (``Slutgiltigt svar`` before ``Svar``).
LABELS: dict[str, Labels] = {
    "en": Labels("en", "Thought", "Action", "Observation", "Final Answer", "Task", ("Answer",)),
    "tr": Labels(
        "tr", "Düşünce", "Eylem", "Gözlem", "Cevap", "Görev",
        ("Nihai Cevap", "Son Cevap", "Nihai Yanıt", "Yanıt"),
    ),
    "ar": Labels(
        "ar", "الفكرة", "الإجراء", "الملاحظة", "الإجابة", "المهمة",
        ("الإجابة النهائية", "الجواب النهائي", "الجواب"),
    ),
    "ja": Labels(
        "ja", "考え", "行動", "観察", "答え", "タスク", ("最終回答", "最終的な答え", "回答")
    ),
    "sv": Labels(
        "sv", "Tanke", "Handling", "Observation", "Svar", "Uppgift",
        ("Slutgiltigt svar", "Slutligt svar", "Slutsvar"),
    ),
}  # fmt: skip


def get_labels(lang: str) -> Labels:
    """Return the label set for ``lang`` (``en``, ``tr``, ``ar``, ``ja``, ``sv``)."""
    try:
        return LABELS[lang]
    except KeyError:
        known = ", ".join(LABELS)
        raise ValueError(f"unknown language {lang!r}; choose one of: {known}") from None
