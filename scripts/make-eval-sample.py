#!/usr/bin/env python3
"""Build the evaluation sample shipped inside the package (src/tao/eval/sample/).

Why: ``tao eval`` and the wiki tools must run from a fresh clone with nothing beside it,
so a small, license-clean slice of the benchmark data travels with the code. This script
cuts that slice from a full data folder (the layout of ``tao eval fetch``'s cache, or of a
``shared/data`` folder) the same way every time: the first 20 HotpotQA dev questions in
file order, every context paragraph they come with (the distractor setting: their gold
pages and the distractors HotpotQA picked), the first 20 FEVER claims and their evidence
pages, a fixed list of extra pages (names the wiki-search tests misspell), and the ReAct
paper's prompts, byte for byte. Output is sorted and written with fixed JSON settings, so
two runs over the same input give identical files.

    python scripts/make-eval-sample.py ../shared/data            # writes src/tao/eval/sample
    python scripts/make-eval-sample.py DATA --out /tmp/sample --questions 20 --claims 20
"""

from __future__ import annotations

import argparse
import html
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "src" / "tao" / "eval" / "sample"

#: Pages added beyond the questions' own: the names tests/tools/test_wiki.py misspells
#: (transliterations, two-word names), the real-corpus test's odd title, and distractors
#: (the titles a whole-string fuzzy match confused them with on the full wiki).
EXTRA_TITLES = (
    '"Q" Is for Quarry',
    "Aleksandr Ivanovsky",
    "Alexander Kerensky",
    "Bill Clinton",
    "Dziga Vertov",
    "Ephraim Sklyansky",
    "Ibn Khaldun",
    "International Tchaikovsky Competition",
    "Lavr Kornilov",
    "Lev Kuleshov",
    "Mikhail Gorbachev",
    "Monica Lewinsky",
    "Nikolai Podgorny",
    "Olga Morozova",
    "Pyotr Ilyich Tchaikovsky",
    "Semyon Aranovich",
    "Sultan Ahmed Mosque",
    "Valentina Tereshkova",
    "Zaheer Khan",
    # ... and titles that share a word or a sound with them: what a loose match would offer
    "1980 Bavarian Tennis Championships – Singles",
    "2009 Colorado Buffaloes football team",
    "Albert Ward (film director)",
    "Battle of White Plains",
    "Chaikovskij (crater)",
    "Charles Burnett (director)",
    "Citizen Khan",
    "Director of the Defense Intelligence Agency",
    "Drama Desk Award for Outstanding Director",
    "Frederick King (cricketer)",
    "Grand Duke Alexander Alexandrovich of Russia",
    "Khan Kluay",
    "Mahamudu Bawumia",
    "Marek Brodzki",
    "Muhammad Ali vs. Joe Frazier II",
    "Owsley Stanley",
    "Piano Concerto No. 2 (Tchaikovsky)",
    "Piano Sonata in C-sharp minor (Tchaikovsky)",
    "Sergio Casal",
    "Tchaikovsky (film)",
    "Tennis (magazine)",
    "Zaheer",
)

PROMPT_FILES = ("prompts_naive.json", "fever.json", "hotpotqa_instruction.txt", "LICENSE")

NOTICE = """\
# What this sample is, and its licenses

A small slice of the benchmark data, so that `tao eval` and the wiki tools run offline
from a fresh install. Built by `scripts/make-eval-sample.py`; the full sets:
`tao eval fetch` (see README, "The paper's table").

{table}

The CC BY-SA texts are shared under the same licenses: https://creativecommons.org/licenses/by-sa/4.0/
and https://creativecommons.org/licenses/by-sa/3.0/. The rest of tao is MIT licensed.
"""


#: The NOTICE table: file, what, source, license.
ROWS = (
    ("file", "what", "source", "license"),
    ("---", "---", "---", "---"),
    (
        "hotpotqa/questions_dev.jsonl",
        "the first {questions} HotpotQA dev questions (distractor setting)",
        "HotpotQA, Yang et al. 2018, https://hotpotqa.github.io",
        "CC BY-SA 4.0",
    ),
    (
        "hotpotqa/wiki.jsonl",
        "{pages} Wikipedia paragraphs: the questions' context paragraphs, the FEVER claims' "
        "pages and {extra} extra pages",
        "Wikipedia text as distributed with HotpotQA",
        "CC BY-SA 4.0",
    ),
    (
        "fever/claims_on_local_wiki.json",
        "{claims} FEVER paper_dev claims whose evidence pages are in wiki.jsonl",
        "FEVER, Thorne et al. 2018, https://fever.ai",
        "CC BY-SA 3.0",
    ),
    (
        "react_prompts/",
        "the ReAct paper's few-shot prompts and HotpotQA instruction, unchanged",
        "https://github.com/ysymyth/ReAct",
        "MIT, Copyright (c) 2023 Shunyu Yao (react_prompts/LICENSE)",
    ),
)


def read_jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def normalize(title: str) -> str:
    return " ".join(html.unescape(title).replace("_", " ").split()).casefold()


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
    path.write_text(text, encoding="utf-8")


def build(source: Path, out: Path, questions: int, claims: int) -> dict[str, int]:
    """Write the sample to ``out`` (replaced); return what it holds."""
    hotpot = read_jsonl(source / "hotpotqa" / "questions_dev.jsonl")[:questions]
    wiki = read_jsonl(source / "hotpotqa" / "wiki.jsonl")
    fever = json.loads((source / "fever" / "claims_on_local_wiki.json").read_text("utf-8"))
    by_title: dict[str, list[dict[str, object]]] = {}
    for row in wiki:
        by_title.setdefault(normalize(str(row["title"])), []).append(row)
    wanted = {normalize(t) for q in hotpot for t in q["context_titles"]}  # type: ignore[attr-defined]
    chosen_claims = fever[:claims]
    wanted |= {normalize(t) for c in chosen_claims for t in c["pages"]}
    wanted |= {normalize(t) for t in EXTRA_TITLES}
    missing = sorted(t for t in wanted if t not in by_title)
    if missing:
        sys.exit(f"pages missing from {source / 'hotpotqa' / 'wiki.jsonl'}: {missing}")
    pages = [row for title in sorted(wanted) for row in by_title[title]]
    if out.exists():
        shutil.rmtree(out)
    write_jsonl(out / "hotpotqa" / "questions_dev.jsonl", hotpot)
    write_jsonl(out / "hotpotqa" / "wiki.jsonl", pages)
    (out / "fever").mkdir(parents=True)
    (out / "fever" / "claims_on_local_wiki.json").write_text(
        json.dumps(chosen_claims, ensure_ascii=False, indent=1, sort_keys=True) + "\n", "utf-8"
    )
    (out / "react_prompts").mkdir()
    for name in PROMPT_FILES:  # byte for byte: their sha256 is the ReAct repository's
        shutil.copyfile(source / "react_prompts" / name, out / "react_prompts" / name)
    counts = {
        "questions": len(hotpot),
        "pages": len(pages),
        "extra": len(EXTRA_TITLES),
        "claims": len(chosen_claims),
    }
    table = "\n".join(
        "| " + " | ".join(cell.format(**counts) for cell in row) + " |" for row in ROWS
    )
    (out / "NOTICE.md").write_text(NOTICE.format(table=table), encoding="utf-8")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="a full data folder (hotpotqa/, fever/, ...)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--claims", type=int, default=20)
    args = parser.parse_args()
    counts = build(args.data, args.out, args.questions, args.claims)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"{args.out}: {counts}, {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
