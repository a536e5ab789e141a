"""Page titles close to a misspelled search, as Wikipedia's own search suggests them.

A model types names the way it half-remembers them: both words of a name misspelled
("Bil Clintn"), a role word after the name ("Stanley Kubrik director"), or another
transliteration ("Chaikovsky", "Gorbatschow", "Muhammad"). One whole-string score misses
these: the role word drags the ratio down, and transliterations differ in many letters.
So titles are found and scored with rapidfuzz in three ways, and the best score counts:

- ``WRatio`` of the whole strings (accents folded): one misspelled word, a swapped order;
- ``token_set_ratio`` of their *skeletons* and ``partial_token_sort_ratio``: only to find
  candidates (a one-word title inside a longer query scores 100 on them: too loose);
- a word alignment of the candidates: each title word against its best query word and
  each query word against its best title word, where two words match as spelled or as
  skeletons. Both coverages count, each without its worst word when it has three or
  more (a role word in the query, a middle name in the title), so a title the query
  names fully wins over one it only touches.

A skeleton folds the usual transliteration differences: accents, ``tch/tsch/ch``,
``kh/h``, ``w/v``, ``ph/f``, ``c/k``, ``y/i``, doubled letters, and the vowels after a
word's first letter (``Mohammed``/``Muhammad`` → ``mhmd``, ``Gorbachev``/``Gorbatschow``
→ ``grbchv``).

Candidates come from rapidfuzz's C scorers over every title (fast for tens of thousands);
only they get the word alignment. Scores below :data:`CUTOFF` are not offered.

    matcher = TitleMatcher(["Bill Clinton", "Ed Wood"])
    matcher.close("Bil Clintn president", 5)      # ['Bill Clinton']
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

#: How close (0-100) a title must be to a search to be offered ahead of BM25's matches.
CUTOFF = 80
#: How close (0-100) two words must be to count as the same word at all.
WORD_MATCH = 80
#: Titles each rapidfuzz pass hands to the word alignment.
CANDIDATES = 40
#: Query words that never name a page: they only make a whole-string score worse.
_STOPWORDS = frozenset({"the", "of", "a", "an", "and", "in", "on", "for", "to", "de", "la"})
_SKELETON_RULES = (
    ("tsch", "ch"),
    ("tch", "ch"),
    ("sch", "sh"),
    ("ch", "\x01"),  # kept apart from c -> k
    ("kh", "h"),
    ("ph", "f"),
    ("ck", "k"),
    ("c", "k"),
    ("q", "k"),
    ("w", "v"),
    ("z", "s"),
    ("x", "ks"),
    ("j", "i"),
    ("y", "i"),
    ("\x01", "ch"),
)
_VOWELS = re.compile(r"[aeiou]+")
_DOUBLE = re.compile(r"(.)\1+")
_NOT_WORD = re.compile(r"[^\w\s]+")


def fold(text: str) -> str:
    """Lower case, accents and punctuation gone, spaces single: ``Pérez`` → ``perez``."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(_NOT_WORD.sub(" ", plain.casefold()).split())


def skeleton(word: str) -> str:
    """A word with transliteration differences folded away (see the module docstring)."""
    for old, new in _SKELETON_RULES:
        word = word.replace(old, new)
    word = _DOUBLE.sub(r"\1", word)
    return word[:1] + _VOWELS.sub("", word[1:]) if len(word) > 1 else word


def _words(folded: str) -> list[str]:
    return [w for w in folded.split() if w not in _STOPWORDS] or folded.split()


def _word_similarity(a: str, b: str) -> float:
    """0-100: the words as spelled, or their skeletons (discounted a little, being lossy)."""
    from rapidfuzz import fuzz

    score = fuzz.ratio(a, b)
    sa, sb = skeleton(a), skeleton(b)
    if len(sa) >= 3 and len(sb) >= 3:
        score = max(score, 0.95 * fuzz.ratio(sa, sb))
    short = max(len(a), len(b)) <= 4  # one letter off in a short word ("wodd") is 75
    return score if score >= WORD_MATCH - 5 * short else 0.0  # "film" is not "filmmaker"


def _alignment(query: list[str], title: list[str]) -> float:
    """Mean of the title's coverage by the query and the query's by the title (0-100);
    a query word that matches nothing (a role word) lowers only the second."""
    if not query or not title:
        return 0.0
    pairs = [[_word_similarity(q, t) for t in title] for q in query]
    best = sorted((max(row) for row in pairs), reverse=True)
    if len(best) >= 3:  # a name and a role word ("Stanley Kubrik director"): skip the worst
        best = best[:-1]
    query_cov = sum(best) / len(best)
    covered = sorted(
        ((max(row[j] for row in pairs), len(word)) for j, word in enumerate(title)), reverse=True
    )
    if len(covered) >= 3:  # a middle name or a qualifier the query left out: skip the worst
        covered = covered[:-1]
    title_cov = sum(score * weight for score, weight in covered) / sum(w for _, w in covered)
    if len(query) == 1:  # one word ("Chaikovsky"): any title it names, the shortest first
        return 0.9 * query_cov + 0.1 * title_cov
    if title_cov < CUTOFF:  # the title names more than the query said: not a close match
        return min(title_cov, query_cov)
    return (title_cov + query_cov) / 2


class TitleMatcher:
    """Every title of a corpus, folded and skeletonised once, for :meth:`close`."""

    def __init__(self, titles: Sequence[str]) -> None:
        self.titles = list(dict.fromkeys(titles))
        self.folded = [fold(t) for t in self.titles]
        self.skeletons = [" ".join(skeleton(w) for w in _words(f)) for f in self.folded]

    def close(self, query: str, count: int) -> list[str]:
        """Up to ``count`` titles scoring :data:`CUTOFF` or more for ``query``, best first
        (ties keep file order)."""
        from rapidfuzz import fuzz, process

        folded = fold(query)
        words = _words(folded)
        if not words or not self.titles:
            return []
        query_skeleton = " ".join(skeleton(w) for w in words)
        scores: dict[int, float] = {}
        passes = (
            (folded, self.folded, fuzz.WRatio),
            (query_skeleton, self.skeletons, fuzz.token_set_ratio),
            (folded, self.folded, fuzz.partial_token_sort_ratio),
        )
        for text, choices, scorer in passes:
            for _, _score, index in process.extract(
                text, choices, scorer=scorer, limit=CANDIDATES, score_cutoff=50
            ):
                scores.setdefault(index, 0.0)
        for index in scores:  # the passes only find candidates: their scores are too loose
            scores[index] = _alignment(words, _words(self.folded[index]))
        ranked = sorted(
            (i for i, s in scores.items() if s >= CUTOFF), key=lambda i: (-scores[i], i)
        )
        return [self.titles[i] for i in ranked[:count]]
