"""What decides an eval's answers: :class:`EvalConfig`, and the paper's defaults.

An eval is many ordinary agent runs. What is eval's own (benchmark, strategy, the
paper's prompts, CoT-SC's samples) lives in :class:`EvalConfig`; every agent setting
is one :class:`tao.state.config.RunConfig` inside it, ``run``, from which each agent's own
config is derived. There is no second list of run settings.

    run = EVAL_RUN.replace(model="local", corpus=corpus, max_steps=7)
    config = EvalConfig(benchmark="hotpotqa", strategy="react", prompts=prompts, run=run)
    config.agent_config("react", prompts, temperature=0.0)   # one agent's RunConfig

This module never imports the agent, so the CLI and ``tao eval report`` stay light.
"""

from __future__ import annotations

from dataclasses import dataclass

from tao.errors import ConfigError
from tao.eval.data import Benchmark
from tao.eval.prompts import STYLES, PromptKind, PromptSet
from tao.state.config import RunConfig
from tao.state.jsontypes import JSONObject

STRATEGIES = ("standard", "cot", "cot-sc", "act", "react", "react-cot-sc", "cot-sc-react")
#: ``--strategy all``: the single strategies first, then the two derived combinations.
ALL_ORDER = ("standard", "cot", "act", "react", "cot-sc", "react-cot-sc", "cot-sc-react")
#: The paper's step limits (SPEC L5).
DEFAULT_STEPS: dict[str, int] = {"hotpotqa": 7, "fever": 5}
DEFAULT_SAMPLES = 21
#: Bumped when the prompts or the reading of answers change: old results files are not resumed.
EVAL_FORMAT = 3
#: The same, for one strategy whose reading alone changed, so only its old files stop
#: resuming. CoT 2: a reply without a readable answer is asked again under the grammar.
#: Act, ReAct and their combinations 2: the wiki's tools are volatile (a repeated lookup
#: gives the next match, no longer the first again as a repeat). ReAct→CoT-SC 3: a
#: ReAct answer forced by the step budget backs off to CoT-SC, as in the paper.
STRATEGY_FORMAT: dict[str, int] = {
    "cot": 2,
    "act": 2,
    "react": 2,
    "react-cot-sc": 3,
    "cot-sc-react": 2,
}
DEFAULT_SC_TEMPERATURE = 0.7
#: The prompt style (:data:`tao.eval.prompts.STYLES`) of an eval that names none: the
#: paper's first three examples. Picked by exact matches per second of ReAct on the first
#: 20 dev questions with the embedded model (``bench/prompt_styles.py``, docs/results.md):
#: EM 15% at 35.7 s/question against the paper's 6-shot 10% at 37.2, a third fewer tokens.
#: FEVER's paper prompt has three examples, so there the two are the same.
DEFAULT_PROMPT = "shots3"
#: The run settings every eval agent starts from: the paper's text format, its observation
#: format (no untrusted-data fences: a local corpus), and limits sized for a slow local model.
EVAL_RUN = RunConfig(
    protocol="text",
    max_steps=7,
    max_seconds=1800.0,
    max_tokens=10_000_000,
    max_reply_tokens=256,
    fence_untrusted=False,
    compaction="none",  # the paper's runs are short: its prompts and grammar, unchanged
)


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """Everything that decides an eval's answers; picklable, so Ray workers get it whole.

    Only what is eval's own lives here; the agents' settings (model, base_url, max_steps,
    max_seconds, max_reply_tokens, grammar, corpus…) are one :class:`RunConfig`, ``run``,
    from which :meth:`agent_config` derives each agent's.

        run = EVAL_RUN.replace(model="local", corpus=corpus, max_steps=7)
        config = EvalConfig(benchmark="hotpotqa", strategy="react", prompts=prompts, run=run)
    """

    benchmark: Benchmark
    strategy: str
    prompts: str
    """The paper's ``react_prompts/`` folder (an absolute path)."""
    questions: str = ""
    """The questions file, as it identifies the results (an absolute path)."""
    samples: int = DEFAULT_SAMPLES
    """CoT-SC samples per question."""
    sc_temperature: float = DEFAULT_SC_TEMPERATURE
    """The sampling temperature of CoT-SC."""
    prompt: str = DEFAULT_PROMPT
    """The prompt style: how much of the paper's prompt is sent, and what is added."""
    run: RunConfig
    """The agents' settings, usually :data:`EVAL_RUN` with some replaced; ``run.model`` is
    the model spec and ``run.corpus`` the wiki corpus (both required)."""

    def __post_init__(self) -> None:
        if not self.run.model:
            raise ConfigError("an eval needs a model spec (run.model), e.g. 'local'")
        if not self.run.corpus:
            raise ConfigError("an eval needs the wiki corpus (run.corpus)")
        if self.prompt not in STYLES:
            raise ConfigError(
                f"unknown prompt style {self.prompt!r}; choose one of {', '.join(STYLES)}"
            )

    @property
    def model(self) -> str:
        """The model spec every agent of this eval uses."""
        return self.run.model or ""

    @property
    def corpus(self) -> str:
        return self.run.corpus or ""

    def agent_config(self, kind: PromptKind, prompts: PromptSet, temperature: float) -> RunConfig:
        """The settings of one agent run with prompt ``kind``: acting kinds get the wiki."""
        acting = kind in ("act", "react")
        return self.run.replace(
            tools=("wiki",) if acting else (),
            corpus=self.run.corpus if acting else None,
            max_steps=self.run.max_steps if acting else 1,
            temperature=temperature,
            grammar=self.run.grammar and kind == "react",
            system_prompt=prompts.system(kind, STYLES[self.prompt]),
            numbered=acting,
            task_label=prompts.task_label,
        )

    def key(self) -> JSONObject:
        """What identifies the results (the file they resume from): not limits of the run.

        The same keys and values as tao's first results files, so those still resume: the
        prompt style is a key only when it is not the paper's, a strategy's own format only
        once it has one (:data:`STRATEGY_FORMAT`).
        """
        run = self.run
        since: JSONObject = {} if self.prompt == "paper" else {"prompt": self.prompt}
        if self.strategy in STRATEGY_FORMAT:
            since["strategy_format"] = STRATEGY_FORMAT[self.strategy]
        return {
            **since,
            "benchmark": self.benchmark,
            "strategy": self.strategy,
            "model": run.model,
            "base_url": run.base_url,
            "corpus": run.corpus,
            "prompts": self.prompts,
            "format": EVAL_FORMAT,
            "questions": self.questions,
            "max_steps": run.max_steps,
            "samples": self.samples,
            "sc_temperature": self.sc_temperature,
            "grammar": run.grammar,
            "max_reply_tokens": run.max_reply_tokens,
        }
