"""The ``wiki`` tool set: the ReAct paper's Wikipedia actions over a local corpus (SPEC T2).

Semantics follow ``wikienv.py`` of the paper's code (ysymyth/ReAct), with a local
JSONL corpus (one ``{"title", "text", ...}`` object per line) instead of the web:

- ``search[entity]``: an exact title (case, ``_`` and spacing ignored) opens that
  page and returns its first paragraph; otherwise
  ``Could not find ENTITY. Similar: ['T1', ...].`` with the top 5 titles by BM25.
- ``lookup[keyword]``: the next sentence of the open page that contains the
  keyword, as ``(Result i / n) sentence``; ``No more results.`` after the last.

The BM25 index is built once per corpus file (keyed by path, size and mtime) and
shared by every :class:`WikiEnv` in the process; each env keeps its own page.

    search, lookup = wiki_tools(Path("wiki.jsonl"))
    search.invoke({"entity": "Scott Derrickson"})
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
import threading
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tao.errors import ConfigError, MissingPackageError, ToolError
from tao.state.jsontypes import JSONObject
from tao.tools.base import Tool, make_tool

if TYPE_CHECKING:
    from tao.tools.fuzzy_titles import TitleMatcher

SIMILAR_COUNT = 5
_CACHE_SIZE = 4


class CorpusError(ConfigError):
    """The wiki corpus is missing, unreadable, or has a malformed line (named by number)."""


@dataclass(frozen=True)
class Paragraph:
    title: str
    text: str
    sentences: tuple[str, ...]


def normalize_title(title: str) -> str:
    """``Scott_Derrickson``, ``scott  derrickson`` and ``Scott Derrickson`` are one title."""
    text = unicodedata.normalize("NFKC", html.unescape(title)).replace("_", " ")
    return " ".join(text.split()).casefold()


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”')\]]*\s+(?=[\"“'(\[]?[A-Z0-9])")


def split_sentences(text: str) -> tuple[str, ...]:
    """Split a paragraph into sentences, a little more carefully than wikienv's ``'. '``."""
    return tuple(s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip())


class _Retriever(Protocol):
    """The part of ``bm25s.BM25`` this module uses (bm25s ships no type hints)."""

    def index(self, tokens: object, *, show_progress: bool) -> None: ...

    def retrieve(
        self, tokens: list[list[str]], *, k: int, show_progress: bool, n_threads: int
    ) -> tuple[Sequence[Sequence[int]], Sequence[Sequence[float]]]: ...


def _paragraph(row: JSONObject, where: str) -> Paragraph:
    title, text = row.get("title"), row.get("text")
    if not isinstance(title, str) or not isinstance(text, str):
        raise CorpusError(f"{where}: each line needs string fields 'title' and 'text'")
    given = row.get("sentences")
    given = given if isinstance(given, list) else []
    strings = [s for s in given if isinstance(s, str)]
    if given and len(strings) == len(given):
        sentences = tuple(s.strip() for s in strings if s.strip())
    else:
        sentences = split_sentences(text)
    return Paragraph(html.unescape(title).strip(), text.strip(), sentences)


def read_corpus(path: Path) -> list[Paragraph]:
    """Parse a JSONL corpus; raise :class:`CorpusError` naming the file and line on any fault."""
    try:
        raw_lines = path.read_bytes().splitlines()
    except OSError as error:
        raise CorpusError(f"cannot read wiki corpus {str(path)!r}: {error.strerror}") from None
    paragraphs: list[Paragraph] = []
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise CorpusError(f"{where}: not UTF-8 text") from None
        except json.JSONDecodeError as error:
            raise CorpusError(f"{where}: not valid JSON ({error.msg})") from None
        if not isinstance(row, dict):
            raise CorpusError(f"{where}: each line must be a JSON object")
        paragraphs.append(_paragraph(row, where))
    if not paragraphs:
        raise CorpusError(f"wiki corpus {str(path)!r} has no paragraphs")
    return paragraphs


@dataclass
class Corpus:
    """Paragraphs grouped into pages by title, with a BM25 index over titles and text."""

    path: Path
    paragraphs: list[Paragraph]
    pages: dict[str, list[Paragraph]] = field(default_factory=dict)
    build_seconds: float = 0.0
    _retriever: _Retriever | None = None
    _titles: TitleMatcher | None = None
    """Every page title once, in file order: what misspelled searches are matched against."""

    def __post_init__(self) -> None:
        started = time.perf_counter()
        for paragraph in self.paragraphs:  # file order: a page's first paragraph comes first
            self.pages.setdefault(normalize_title(paragraph.title), []).append(paragraph)
        import bm25s  # heavy; only a run with the wiki tools pays for it

        documents = [f"{p.title} {p.title}\n{p.text}" for p in self.paragraphs]
        tokens = bm25s.tokenize(documents, stopwords="en", show_progress=False)
        if tokens.vocab:
            retriever: _Retriever = bm25s.BM25()
            retriever.index(tokens, show_progress=False)
            self._retriever = retriever
        self.build_seconds = time.perf_counter() - started

    def page(self, title: str) -> list[Paragraph] | None:
        return self.pages.get(normalize_title(title))

    def similar(self, query: str, count: int = SIMILAR_COUNT) -> list[str]:
        """Titles close to ``query``: misspellings first (``Ed Wod`` finds ``Ed Wood``, as
        Wikipedia's own search does), then the best BM25 matches; no repeats."""
        titles = self._close_titles(query, count)
        for title in self._bm25(query, count):
            if title not in titles:
                titles.append(title)
        return titles[:count]

    def _close_titles(self, query: str, count: int) -> list[str]:
        """Misspellings, names with a role word, transliterations (:mod:`fuzzy_titles`)."""
        from tao.tools.fuzzy_titles import TitleMatcher

        if self._titles is None:
            self._titles = TitleMatcher([p.title for p in self.paragraphs])
        return self._titles.close(query, count)

    def _bm25(self, query: str, count: int) -> list[str]:
        """Titles of the best BM25 matches for ``query``, best first, without repeats."""
        import bm25s

        if self._retriever is None:
            return []
        tokens = bm25s.tokenize(query, stopwords="en", show_progress=False, return_ids=False)
        if not tokens or not tokens[0]:
            return []
        k = min(len(self.paragraphs), count * 4)
        ids, scores = self._retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        titles: list[str] = []
        for index, score in zip(ids[0], scores[0], strict=True):
            title = self.paragraphs[int(index)].title
            if score > 0 and title not in titles:
                titles.append(title)
        return titles[:count]


_cache: dict[tuple[str, int, int], Corpus] = {}
_cache_lock = threading.Lock()


#: What the wiki tools import beyond tao's core: ``pip install 'tao[wiki]'`` brings them.
SEARCH_PACKAGES = ("bm25s", "rapidfuzz")


def require_search_packages() -> None:
    """BM25 and fuzzy title matching are an optional extra; say how to get them before
    any work (a run with the wiki tools, or an eval, would fail on its first search)."""
    missing = [name for name in SEARCH_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingPackageError(
            f"the wiki tools need {' and '.join(missing)}, not installed: pip install 'tao[wiki]'"
        )


def load_corpus(path: Path | str) -> Corpus:
    """The corpus at ``path``, parsed and indexed once per process while the file is unchanged."""
    require_search_packages()
    resolved = Path(path).expanduser().resolve()
    try:
        info = resolved.stat()
    except OSError:
        raise CorpusError(f"wiki corpus {str(path)!r} does not exist") from None
    if not resolved.is_file():
        raise CorpusError(f"wiki corpus {str(path)!r} is not a file")
    key = (str(resolved), info.st_mtime_ns, info.st_size)
    with _cache_lock:
        if key not in _cache:
            corpus = Corpus(resolved, read_corpus(resolved))
            if len(_cache) >= _CACHE_SIZE:
                _cache.pop(next(iter(_cache)))
            _cache[key] = corpus
        return _cache[key]


class WikiEnv:
    """One agent's view of the corpus: the open page and where ``lookup`` has got to."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.page: list[Paragraph] | None = None
        self.lookup_keyword: str | None = None
        self.lookup_list: list[str] = []
        self.lookup_count = 0

    def search(self, entity: str) -> str:
        entity = entity.strip()
        if not entity:
            raise ToolError("search needs an entity, e.g. search[Scott Derrickson]")
        page = self.corpus.page(entity)
        if page is None:
            return f"Could not find {entity}. Similar: {self.corpus.similar(entity)}."
        self.page = page
        self.lookup_keyword, self.lookup_list, self.lookup_count = None, [], 0
        return page[0].text

    def lookup(self, keyword: str) -> str:
        keyword = keyword.strip()
        if not keyword:
            raise ToolError("lookup needs a keyword, e.g. lookup[born]")
        if self.page is None:
            raise ToolError("no page is open: use search[entity] first, then lookup[keyword]")
        if keyword != self.lookup_keyword:
            self.lookup_keyword = keyword
            folded = keyword.casefold()
            self.lookup_list = [s for p in self.page for s in p.sentences if folded in s.casefold()]
            self.lookup_count = 0
        if self.lookup_count >= len(self.lookup_list):
            return "No more results."
        self.lookup_count += 1
        sentence = self.lookup_list[self.lookup_count - 1]
        return f"(Result {self.lookup_count} / {len(self.lookup_list)}) {sentence}"


def default_corpus() -> Path:
    """The wiki used without ``--corpus``: ``$TAO_EVAL_DATA``'s, else the one ``tao eval
    fetch`` downloaded, else the sample shipped in the package (a few hundred pages), so
    ``--tools wiki`` works from a fresh install, offline."""
    from tao.eval.sources import default_corpus as find

    return find()


def wiki_tools(corpus: Path | str) -> list[Tool]:
    """Build ``search`` and ``lookup`` sharing one :class:`WikiEnv` over the corpus file."""
    env = WikiEnv(load_corpus(corpus))

    def search(entity: str) -> str:
        """Search the wiki for an entity: its page's first paragraph, or similar titles.

        Args:
            entity: The exact title of a page, e.g. "Scott Derrickson".
        """
        return env.search(entity)

    def lookup(keyword: str) -> str:
        """Find the next sentence containing a keyword in the page the last search opened.

        Args:
            keyword: A word or phrase to look for, e.g. "born"; repeat it for the next match.
        """
        return env.lookup(keyword)

    # Both are volatile (Tool.volatile): a repeated lookup gives the next match, and a
    # repeated search must really run, since it moves lookup back to its page's start.
    return [make_tool(search, volatile=True), make_tool(lookup, volatile=True)]
