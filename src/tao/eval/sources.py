"""Where the benchmark data comes from: a folder you name, the download cache, or the sample.

Every data folder has one layout (the shipped sample, ``tao eval fetch``'s cache and a
hand-made folder alike)::

    hotpotqa/questions_dev.jsonl      HotpotQA questions, one JSON object a line
    hotpotqa/wiki.jsonl               the local Wikipedia: {"title", "text", "sentences"}
    fever/claims_on_local_wiki.json   FEVER claims (a JSON array) whose pages are in wiki.jsonl
    react_prompts/                    the ReAct paper's prompts (prompts_naive.json, ...)

:func:`find_data` picks the first that exists, in this order, so a fresh clone runs offline
and a download or an explicit folder wins as soon as there is one:

1. ``--data DIR`` (or ``$TAO_EVAL_DATA``): a folder in that layout;
2. the download cache, ``$TAO_CACHE_DIR/eval-data`` (default: the platform's user cache
   folder), filled by ``tao eval fetch``; used only once its ``manifest.json`` is written,
   which happens last, so a half-finished download is never read;
3. the sample inside the package (``tao/eval/sample``): 20 questions, 20 claims, their pages.

``--questions``, ``--corpus`` and ``--prompts`` still override one part each.

    data = find_data()
    data.questions("hotpotqa"), data.corpus, data.prompts, data.describe()
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tao.eval.data import Benchmark

#: A data folder to use instead of the cache and the sample.
DATA_ENV = "TAO_EVAL_DATA"
#: Where tao keeps downloads (default: platformdirs.user_cache_dir("tao")).
CACHE_ENV = "TAO_CACHE_DIR"
#: What tells a user how to get the full sets.
FETCH_HINT = "tao eval fetch (about 50 MB, once, when online)"

QUESTIONS_FILES: dict[Benchmark, str] = {
    "hotpotqa": "hotpotqa/questions_dev.jsonl",
    "fever": "fever/claims_on_local_wiki.json",
}
CORPUS_FILE = "hotpotqa/wiki.jsonl"
PROMPTS_DIR = "react_prompts"
#: Written last by a download: a cache folder without it is not used.
MANIFEST = "manifest.json"

Origin = Literal["folder", "cache", "sample"]


def sample_dir() -> Path:
    """The sample shipped in the package (package data beside this module)."""
    return Path(__file__).resolve().parent / "sample"


def cache_root() -> Path:
    """``$TAO_CACHE_DIR``, else the platform's user cache folder for tao."""
    chosen = os.environ.get(CACHE_ENV, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    import platformdirs  # only when asked: it costs import time on every ``tao`` call

    return Path(platformdirs.user_cache_dir("tao"))


def cache_dir() -> Path:
    """The folder ``tao eval fetch`` fills (complete once :data:`MANIFEST` is in it)."""
    return cache_root() / "eval-data"


@dataclass(frozen=True)
class DataSource:
    """One data folder in the common layout, and where it was found."""

    root: Path
    origin: Origin

    def questions(self, benchmark: Benchmark) -> Path:
        return self.root / QUESTIONS_FILES[benchmark]

    @property
    def corpus(self) -> Path:
        return self.root / CORPUS_FILE

    @property
    def prompts(self) -> Path:
        return self.root / PROMPTS_DIR

    def describe(self, benchmark: Benchmark, count: int) -> str:
        """One line for the top of an eval: which data, and how to get more."""
        if self.origin == "sample":
            kind = "questions" if benchmark == "hotpotqa" else "claims"
            return (
                f"data: the shipped {count}-{kind[:-1]} sample (tao/eval/sample), not the "
                f"full dev set; scores on it are a smoke test. The full set: {FETCH_HINT}"
            )
        where = "the download cache" if self.origin == "cache" else "the data folder"
        return f"data: {where} {self.root}"


def find_data(folder: Path | None = None) -> DataSource:
    """The data folder to use: ``folder`` (``--data``), ``$TAO_EVAL_DATA``, the cache, the sample.

    A named folder that does not exist is an error rather than a silent fall back to the
    sample: the user asked for it, and a score on other data would mislead.
    """
    from tao.eval.data import EvalDataError

    named = folder or (Path(os.environ[DATA_ENV]) if os.environ.get(DATA_ENV) else None)
    if named is not None:
        named = named.expanduser()
        if not named.is_dir():
            source = "--data" if folder else f"${DATA_ENV}"
            raise EvalDataError(f"{source} {named}: no such folder")
        return DataSource(named, "folder")
    cached = cache_dir()
    if (cached / MANIFEST).is_file():
        return DataSource(cached, "cache")
    return DataSource(sample_dir(), "sample")


def default_corpus() -> Path:
    """The wiki the wiki tools use when no ``--corpus`` is given (same order as the eval)."""
    return find_data().corpus
