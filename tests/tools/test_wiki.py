"""search/lookup follow the ReAct paper's wikienv semantics over a local corpus (SPEC T2)."""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tao import Agent, Status
from tao.errors import ToolError
from tao.eval.sources import sample_dir
from tao.state.jsontypes import JSONObject
from tao.tools.fuzzy_titles import TitleMatcher, fold, skeleton
from tao.tools.wiki import CorpusError, load_corpus, wiki_tools

SAMPLE_CORPUS = sample_dir() / "hotpotqa" / "wiki.jsonl"


ROWS: list[JSONObject] = [
    {
        "title": "Ed Wood",
        "text": "Edward Davis Wood Jr. was an American filmmaker. He was born in Poughkeepsie. "
        "Wood made low-budget films. Film critics later celebrated Wood.",
    },
    {"title": "Ed Wood (film)", "text": "Ed Wood is a 1994 American biographical film."},
    {"title": "Scott Derrickson", "text": "Scott Derrickson is an American director."},
    {"title": "Ed Wood", "text": "A second paragraph about Wood and his later films."},
    {
        "title": "Doctor Strange (2016 film)",
        "text": "This text is ignored when sentences are given.",
        "sentences": ["Doctor Strange is a 2016 film.", " It was directed by Derrickson."],
    },
    {"title": "A&amp;W Restaurants", "text": "A&W Restaurants is a chain of restaurants."},
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "wiki.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in ROWS) + "\n\n", encoding="utf-8")
    return path


def test_search_exact_title_returns_the_first_paragraph_T2(corpus: Path) -> None:
    search, _ = wiki_tools(corpus)
    assert search.invoke({"entity": "Ed Wood"}) == ROWS[0]["text"]
    for variant in ["ed wood", "Ed_Wood", "  ED   WOOD "]:
        assert search.invoke({"entity": variant}) == ROWS[0]["text"]
    assert search.invoke({"entity": "A&W Restaurants"}).startswith("A&W Restaurants is")


def test_search_miss_lists_similar_titles_ranked_by_bm25_T2(corpus: Path) -> None:
    search, _ = wiki_tools(corpus)
    observation = search.invoke({"entity": "Derrickson filmmaker"})
    assert observation.startswith("Could not find Derrickson filmmaker. Similar: ['")
    assert observation.endswith("].")
    similar = ast.literal_eval(observation.split("Similar: ", 1)[1][:-1])  # as in wikienv
    assert similar[0] == "Scott Derrickson"
    assert similar == ["Scott Derrickson", "Ed Wood"]  # one entry per page, zero scores dropped
    assert len(similar) == len(set(similar)) <= 5
    assert search.invoke({"entity": "zzzz qqqq"}) == "Could not find zzzz qqqq. Similar: []."


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("Ed Wod filmmaker", "Ed Wood"),
        ("Scot Derickson", "Scott Derrickson"),
        ("Docter Strange 2016 flim", "Doctor Strange (2016 film)"),
        ("ed  wodd", "Ed Wood"),
    ],
)
def test_a_misspelled_search_lists_the_close_title_first_issue_13(
    corpus: Path, typed: str, expected: str
) -> None:
    search, _ = wiki_tools(corpus)
    observation = search.invoke({"entity": typed})
    assert observation.startswith(f"Could not find {typed}. Similar: ['")
    similar = ast.literal_eval(observation.split("Similar: ", 1)[1][:-1])
    assert expected in similar[:2]  # the close title, ahead of what BM25 alone finds
    assert len(similar) == len(set(similar)) <= 5


def test_lookup_steps_through_sentences_of_the_current_page_T2(corpus: Path) -> None:
    search, lookup = wiki_tools(corpus)
    search.invoke({"entity": "Ed Wood"})
    assert lookup.invoke({"keyword": "wood"}) == (
        "(Result 1 / 4) Edward Davis Wood Jr. was an American filmmaker."
    )
    assert lookup.invoke({"keyword": "wood"}) == "(Result 2 / 4) Wood made low-budget films."
    assert lookup.invoke({"keyword": "born"}) == "(Result 1 / 1) He was born in Poughkeepsie."
    assert lookup.invoke({"keyword": "born"}) == "No more results."
    assert lookup.invoke({"keyword": "wood"}).startswith("(Result 1 / 4)")  # new keyword resets
    assert lookup.invoke({"keyword": "wood"}).startswith("(Result 2 / 4)")
    assert (
        lookup.invoke({"keyword": "wood"}) == "(Result 3 / 4) Film critics later celebrated Wood."
    )
    assert lookup.invoke({"keyword": "wood"}) == (
        "(Result 4 / 4) A second paragraph about Wood and his later films."
    )


def test_lookup_uses_given_sentences_and_a_miss_keeps_the_page_T2(corpus: Path) -> None:
    search, lookup = wiki_tools(corpus)
    search.invoke({"entity": "Doctor Strange (2016 film)"})
    search.invoke({"entity": "No Such Page"})  # a miss does not close the open page
    assert lookup.invoke({"keyword": "directed"}) == "(Result 1 / 1) It was directed by Derrickson."
    search.invoke({"entity": "Scott Derrickson"})
    assert lookup.invoke({"keyword": "directed"}) == "No more results."


def test_lookup_before_any_search_is_a_clear_error_L4(corpus: Path) -> None:
    _, lookup = wiki_tools(corpus)
    with pytest.raises(ToolError, match=r"use search\[entity\] first"):
        lookup.invoke({"keyword": "born"})
    search, _ = wiki_tools(corpus)
    with pytest.raises(ToolError, match="needs an entity"):
        search.invoke({"entity": "  "})


def test_each_tool_set_has_its_own_page_but_shares_the_index(corpus: Path) -> None:
    first_search, first_lookup = wiki_tools(corpus)
    _, second_lookup = wiki_tools(corpus)
    first_search.invoke({"entity": "Ed Wood"})
    assert first_lookup.invoke({"keyword": "born"}).startswith("(Result 1 / 1)")
    with pytest.raises(ToolError):
        second_lookup.invoke({"keyword": "born"})
    assert load_corpus(corpus) is load_corpus(corpus)


def test_corpus_cache_notices_a_changed_file(corpus: Path) -> None:
    before = load_corpus(corpus)
    corpus.write_text(json.dumps({"title": "New Page", "text": "Fresh."}) + "\n")
    after = load_corpus(corpus)
    assert after is not before
    assert after.page("new page") is not None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"title": "A", "text": "ok"}\n{"title": "B", "text": \n',
            r"wiki\.jsonl:2: not valid JSON",
        ),
        ('{"title": "A", "text": "ok"}\n\n["not", "an object"]\n', r"wiki\.jsonl:3: .*JSON object"),
        ('{"title": "A"}\n', r"wiki\.jsonl:1: .*'title' and 'text'"),
        ("\n\n", "has no paragraphs"),
    ],
)
def test_bad_corpus_is_a_clear_error_naming_file_and_line(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "wiki.jsonl"
    path.write_text(content)
    with pytest.raises(CorpusError, match=message):
        wiki_tools(path)


def test_missing_corpus_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="does not exist"):
        wiki_tools(tmp_path / "nope.jsonl")


def test_real_hotpotqa_corpus_search_and_lookup_T2() -> None:
    """The HotpotQA wiki sample shipped in the package (issue 30), as the paper's tools see it."""
    started = time.perf_counter()
    search, lookup = wiki_tools(SAMPLE_CORPUS)
    assert time.perf_counter() - started < 10
    page = search.invoke({"entity": "Scott Derrickson"})
    assert page.startswith("Scott Derrickson (born July 16, 1966) is an American director")
    assert lookup.invoke({"keyword": "horror"}).startswith("(Result 1 / 1) He is best known")
    miss = search.invoke({"entity": "Ed Wood director"})
    assert miss.startswith("Could not find Ed Wood director. Similar: ['Ed Wood'")
    assert search.invoke({"entity": '"Q" Is for Quarry'}).startswith('"Q" Is for Quarry is')


def test_a_repeated_lookup_in_a_run_gives_the_next_match_not_the_first_again_L12(
    corpus: Path, replay: Callable[[list[str]], Path]
) -> None:
    script = replay(
        ["Action: search[Ed Wood]"]
        + ["Action: lookup[Wood]"] * 6
        + ["Action: finish[Poughkeepsie]"]
    )
    agent = Agent(f"replay:{script}", wiki_tools(corpus), record=False, max_repeats=1)
    result = agent.run("Where was Ed Wood born?")
    seen = [s.observation or "" for s in result.steps[1:]]
    assert seen[0].startswith("(Result 1 / 4) Edward Davis Wood Jr.")
    assert seen[1] == "(Result 2 / 4) Wood made low-budget films."  # was: seen[0] again
    assert seen[3] == "(Result 4 / 4) A second paragraph about Wood and his later films."
    assert seen[4] == "No more results."
    assert [s.repeat_of for s in result.steps[1:6]] == [None] * 5  # each said something new
    assert result.steps[6].repeat_of == 6  # "No more results." again: nothing new, a repeat
    assert "No more results." in seen[5] and "already called" in seen[5]
    assert result.status is Status.FINISHED and result.answer == "Poughkeepsie"


def test_a_repeated_search_really_runs_so_lookup_reads_the_page_the_model_was_shown(
    corpus: Path, replay: Callable[[list[str]], Path]
) -> None:
    script = replay(
        [
            "Action: search[Ed Wood]",
            "Action: lookup[film]",
            "Action: search[Scott Derrickson]",
            "Action: search[Ed Wood]",
            "Action: lookup[film]",
            "Action: finish[x]",
        ]
    )
    result = Agent(f"replay:{script}", wiki_tools(corpus), record=False).run("x")
    first, again = result.steps[1].observation or "", result.steps[4].observation or ""
    assert first == "(Result 1 / 4) Edward Davis Wood Jr. was an American filmmaker."
    # search moved lookup back to Ed Wood's first match (a search answered from the first
    # call would have left lookup on Scott Derrickson's page: "No more results.")
    assert first in again and result.steps[4].repeat_of == 2  # the same again: a repeat
    assert result.steps[3].repeat_of == 1


#: Misspelled searches a model makes (issue 30 item 10): both words of a name wrong, a role
#: word after the name, transliterations. All pages are in the shipped sample, with the
#: titles a whole-string match confused them with. Before (WRatio alone, then BM25):
#: 25/35 first, 32/35 listed; after: 34/35 first, 35/35 listed (the same on the full wiki).
MISSPELLINGS = [
    ("Bil Clintn", "Bill Clinton"),
    ("Bill Clnton", "Bill Clinton"),
    ("Bil Clinton president", "Bill Clinton"),
    ("Scot Derikson director", "Scott Derrickson"),
    ("Skott Derrikson", "Scott Derrickson"),
    ("Ed Wod director", "Ed Wood"),
    ("Chaikovsky", "Pyotr Ilyich Tchaikovsky"),
    ("Pyotr Tchaikovsky composer", "Pyotr Ilyich Tchaikovsky"),
    ("Peter Ilich Tchaikovsky", "Pyotr Ilyich Tchaikovsky"),
    ("Piotr Chaikovsky", "Pyotr Ilyich Tchaikovsky"),
    ("Mikhail Gorbachov", "Mikhail Gorbachev"),
    ("Michail Gorbatschow", "Mikhail Gorbachev"),
    ("Gorbachev Soviet leader", "Mikhail Gorbachev"),
    ("Aleksandr Kerenski", "Alexander Kerensky"),
    ("Alexander Kerenskiy politician", "Alexander Kerensky"),
    ("Alexander Ivanovski", "Aleksandr Ivanovsky"),
    ("Valentina Tereshkova cosmonaut", "Valentina Tereshkova"),
    ("Valentina Tereškova", "Valentina Tereshkova"),
    ("Ibn Khaldoun", "Ibn Khaldun"),
    ("Sultan Ahmet Mosque", "Sultan Ahmed Mosque"),
    ("Monika Levinsky", "Monica Lewinsky"),
    ("Dziga Vertof director", "Dziga Vertov"),
    ("Lev Kuleschow", "Lev Kuleshov"),
    ("Olga Morosova tennis player", "Olga Morozova"),
    ("Nikolay Podgorny", "Nikolai Podgorny"),
    ("Semen Aranovich", "Semyon Aranovich"),
    ("Efraim Sklyanski", "Ephraim Sklyansky"),
    ("Zahir Khan cricketer", "Zaheer Khan"),
    ("Gal Gadott actress", "Gal Gadot"),
    ("Alex Fergusson manager", "Alex Ferguson"),
    ("Guiseppe Verdi composer", "Giuseppe Verdi"),
    ("Richard Nixson", "Richard Nixon"),
    ("Peter Shmeichel goalkeeper", "Peter Schmeichel"),
    ("Sergio Perez driver", "Sergio Pérez"),
    ("Lavr Kornilow general", "Lavr Kornilov"),
]


def test_misspelled_names_role_words_and_transliterations_find_their_page_T2() -> None:
    """Issue 30 item 10: the intended page is suggested, almost always first."""
    search, _ = wiki_tools(SAMPLE_CORPUS)
    first, listed, misses = 0, 0, []
    for typed, expected in MISSPELLINGS:
        observation = search.invoke({"entity": typed})
        assert observation.startswith(f"Could not find {typed}. Similar: [")
        similar = ast.literal_eval(observation.split("Similar: ", 1)[1][:-1])
        first += similar[:1] == [expected]
        listed += expected in similar
        if expected not in similar[:2]:
            misses.append((typed, similar))
    assert listed == len(MISSPELLINGS), misses
    assert first >= 33, misses  # 34 today; "Chaikovsky" alone lists the film page first
    assert not misses


@pytest.mark.parametrize(
    "query",
    [
        "American filmmaker",
        "tennis player from Russia",
        "Colorado orogeny",
        "High Plains",
        "horror film director",
        "Stanley Kubrik director",
        "Derrickson filmmaker",
        "zzzz qqqq",
    ],
)
def test_a_description_is_left_to_bm25_not_matched_to_a_title_sharing_one_word(
    query: str,
) -> None:
    """A title sharing one word with a search ("2009 Colorado Buffaloes football team" for
    "Colorado orogeny") is not a misspelling of it: offering it first pushed BM25's pages
    down (whole-string WRatio scored such titles 90)."""
    titles = [p.title for p in load_corpus(SAMPLE_CORPUS).paragraphs]
    assert TitleMatcher(titles).close(query, 5) == []


def test_transliteration_skeletons_fold_the_usual_variants() -> None:
    pairs = [
        ("Tchaikovsky", "Chaikovsky"),
        ("Mohammed", "Muhammad"),
        ("Dostoyevsky", "Dostoevsky"),
        ("Gorbachev", "Gorbatschow"),
        ("Pérez", "Perez"),
    ]
    for a, b in pairs:
        assert skeleton(fold(a)) == skeleton(fold(b)), (a, b)
    assert skeleton("clinton") != skeleton("kenton")
