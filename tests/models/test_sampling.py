"""Greedy decoding under a grammar chooses exactly the tokens of the full filter, faster (SPEC M5).

Two loaded copies of the embedded model answer the same prompts under the same grammars:
llama-cpp-python's own sampler (the whole vocabulary tested against the grammar on every
token) and tao's (the grammar asked about the greedy token only). Their texts must be
identical, including where the grammar refuses the model's first choice.
"""

from __future__ import annotations

import pytest

from tao.models.install import default_model_path, model_is_installed, runtime_is_installed
from tao.models.sampling import GreedyUnderGrammar, lazy_grammar

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        not (runtime_is_installed() and model_is_installed()),
        reason="needs llama-cpp-python and the embedded model (python -m tao.models.install)",
    ),
]

#: (prompt, grammar): one the model follows by itself, two it must be forced into.
CASES = [
    (
        "Question: What is the capital of France?\nThought:",
        'root ::= " " [^\\n]+ "\\nAction: search[" [^\\]\\n]+ "]"',
    ),
    ("Name a colour:", 'root ::= " zebra" [0-9] [0-9] "!"'),
    ("Count to three:", 'root ::= ("yes" | "no") " " ("A" | "B")+ "."'),
]


@pytest.fixture(scope="module")
def models() -> tuple[object, object]:
    import llama_cpp

    def load() -> llama_cpp.Llama:
        return llama_cpp.Llama(
            model_path=str(default_model_path()), n_ctx=512, seed=0, verbose=False
        )

    full, lazy = load(), load()
    lazy_grammar(lazy)
    return full, lazy


@pytest.mark.parametrize(("prompt", "rules"), CASES, ids=["followed", "forced", "alternatives"])
def test_same_tokens_as_the_full_grammar_filter_M5(
    models: tuple[object, object], prompt: str, rules: str
) -> None:
    from llama_cpp import Llama, LlamaGrammar

    full, lazy = models
    assert isinstance(full, Llama) and isinstance(lazy, Llama)
    texts = []
    for llama in (full, lazy):
        grammar = LlamaGrammar.from_string(rules, verbose=False)
        out = llama.create_completion(prompt, grammar=grammar, temperature=0.0, max_tokens=40)
        texts.append(out["choices"][0]["text"])  # type: ignore[index]
    assert texts[0] == texts[1]
    assert texts[1]  # something was generated under the grammar


def test_only_greedy_penalty_free_calls_take_the_lazy_sampler(
    models: tuple[object, object],
) -> None:
    from llama_cpp import Llama, LlamaGrammar

    _, lazy = models
    assert isinstance(lazy, Llama)
    grammar = LlamaGrammar.from_string('root ::= " zebra" [0-9] [0-9] "!"', verbose=False)
    greedy = lazy._init_sampler(temp=0.0, repeat_penalty=1.0, grammar=grammar)
    assert isinstance(greedy, GreedyUnderGrammar)
    lazy.create_completion("Name a colour:", grammar=grammar, temperature=0.0, max_tokens=8)
    assert lazy._sampler.refused >= 1  # the model's own first choice was not " zebra"
    sampled = lazy._init_sampler(temp=0.7, repeat_penalty=1.0, grammar=grammar)
    penalised = lazy._init_sampler(temp=0.0, repeat_penalty=1.1, grammar=grammar)
    free = lazy._init_sampler(temp=0.0, repeat_penalty=1.0, grammar=None)
    assert not any(isinstance(s, GreedyUnderGrammar) for s in (sampled, penalised, free))
