"""Each run setting is declared once, as a RunConfig field (issue 29): its click options, its
checks, the Budget and the Agent's keywords are derived from that field, so they cannot drift.

The CLI is parsed by click itself (CliRunner drives the real command objects in-process);
the behaviour of the whole ``tao`` process stays in tests/cli.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import tao
from tao import Agent, RunConfig
from tao.cli.main import main
from tao.cli.settings import config_values, setting_options, shown_settings, split_options
from tao.errors import ConfigError, UnknownSettingError
from tao.eval.config import EVAL_RUN
from tao.run.setup import KEYWORDS
from tao.sandbox.settings import MODE_ENV, MODES, ProcessSettings
from tao.state.budget import Budget
from tao.state.config import Settings
from tao.state.setting import Command, Setting, Variant, setting, settings_of

FIELDS = {f.name: f for f in dataclasses.fields(RunConfig)}


def _params(command: click.Command) -> dict[str, click.Parameter]:
    return {p.name or "": p for p in command.params if isinstance(p, click.Option)}


def _commands() -> dict[str, click.Command]:
    evals = typing.cast(click.Group, main.commands["eval"])
    return {
        "run": main.commands["run"],
        "eval hotpotqa": evals.commands["hotpotqa"],
        "eval fever": evals.commands["fever"],
        "resume": main.commands["resume"],
    }


def test_every_runconfig_field_is_declared_as_a_setting() -> None:
    """A field made without :func:`setting` would escape the checks and the CLI."""
    declared = {f.name for f, _ in settings_of(RunConfig)}
    assert declared == set(FIELDS)


@pytest.mark.parametrize("name", sorted(_commands()))
def test_each_command_has_one_option_per_setting_it_shows_and_no_other(name: str) -> None:
    """Every setting with a flag is exactly one option of each command it names, and every
    option named like a RunConfig field is that setting's (no hand-written copy beside it)."""
    command = _commands()[name]
    shown = shown_settings(typing.cast(Command, name.split()[0]))
    params = _params(command)
    assert shown, name
    for field, spec in shown.items():
        assert spec.flag is not None
        owners = [p for p in params.values() if spec.flag in p.opts]
        assert [p.name for p in owners] == [field], (name, spec.flag)
        assert owners[0].envvar == spec.envvar
        assert spec.short is None or spec.short in owners[0].opts
    strays = {p for p in params if p in FIELDS} - set(shown)
    assert not strays, f"{name}: options named like settings but not derived: {strays}"


def test_the_run_options_carry_the_fields_defaults_ranges_and_help() -> None:
    """What ``tao run --help`` says and accepts is the field's: default, range, words."""
    params = _params(main.commands["run"])
    assert params["max_steps"].default == RunConfig().max_steps
    assert params["max_seconds"].default == RunConfig().max_seconds
    assert params["lang"].default == RunConfig().lang
    assert params["grammar"].default is True and "--no-grammar" in params["grammar"].opts
    for field, spec in shown_settings("run").items():
        assert params[field].help, field
        assert "{" not in (params[field].help or ""), field  # every placeholder filled
        assert spec.help.split("{")[0] in (params[field].help or "")


def test_eval_shows_its_settings_with_eval_run_defaults() -> None:
    params = _params(_commands()["eval fever"])
    assert params["max_seconds"].default == EVAL_RUN.max_seconds
    assert params["max_reply_tokens"].default == EVAL_RUN.max_reply_tokens
    assert params["max_steps"].default is None  # the benchmark decides (7 or 5)
    assert params["model"].envvar == "TAO_MODEL"


def _bad_values(spec: Setting, default: object) -> list[object]:
    """Values the spec refuses, of the setting's own type."""
    bad: list[object] = []
    if spec.minimum is not None:
        bad.append(type(default)(spec.minimum - 1) if default is not None else spec.minimum - 1)
    if spec.above is not None:
        bad.append(spec.above)
    if spec.choices:
        bad.append(("nope",) if spec.repeatable else "nope")
    if spec.pattern is not None:
        bad.append(("A=1",))
    return bad


CHECKED = [
    (name, spec, value)
    for f, spec in settings_of(RunConfig)
    for name in [f.name]
    for value in _bad_values(spec, f.default)
]


@pytest.mark.parametrize(("name", "spec", "value"), CHECKED, ids=[c[0] for c in CHECKED])
def test_a_value_out_of_a_settings_range_is_refused_by_runconfig_and_by_the_cli(
    name: str, spec: Setting, value: object
) -> None:
    """One range, two guards: the library's RunConfig and the command line (exit 2)."""
    with pytest.raises(ValueError, match=name):
        RunConfig(**{name: value})  # type: ignore[arg-type]
    if "run" not in spec.commands():
        return
    words = [str(v) for v in value] if isinstance(value, tuple) else [str(value)]
    arguments = [a for word in words for a in (str(spec.flag), word)]
    outcome = CliRunner().invoke(_probe_command(RunConfig()), arguments)
    assert outcome.exit_code == 2, (arguments, outcome.output)


assert len(CHECKED) >= 8  # max_steps, max_seconds, max_tokens, max_cost, lang, protocol…


def _probe_command(defaults: RunConfig) -> click.Command:
    """A command with the run settings' options that prints the RunConfig they make."""
    kind = type(defaults)

    @click.command()
    @setting_options("run", defaults)
    def probe(**options: object) -> None:
        settings, rest = split_options(options, "run", kind)
        assert not rest
        config = kind(**config_values(settings, kind))  # type: ignore[arg-type]
        click.echo(json.dumps(config.to_json()))

    return probe


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Wider(RunConfig):
    """RunConfig with one more setting, declared the one way a setting is."""

    max_observation_chars: int = setting(
        2000,
        Setting(
            flag="--max-observation-chars",
            minimum=1,
            help="Observation characters shown.",
            eval=Variant(help="Characters of one observation an eval's agent is shown."),
        ),
    )


def test_adding_a_field_with_its_spec_yields_a_working_flag(tmp_path: Path) -> None:
    """The one edit of "How to add a setting" (docs/architecture.md) is enough: the option
    exists, shows the default and range, parses into the config, and refuses what the
    field refuses, in the field's words."""
    probe = _probe_command(_Wider())
    runner = CliRunner()
    shown = runner.invoke(probe, ["--help"]).output
    assert "--max-observation-chars" in shown and "Observation characters shown." in shown
    assert "default: 2000" in shown and "x>=1" in shown
    made = runner.invoke(probe, ["--max-observation-chars", "2", "--max-steps", "3"])
    assert made.exit_code == 0, made.output
    data = json.loads(made.output)
    assert (data["max_observation_chars"], data["max_steps"]) == (2, 3)
    assert json.loads(runner.invoke(probe, []).output)["max_observation_chars"] == 2000
    refused = runner.invoke(probe, ["--max-observation-chars", "0"])
    assert refused.exit_code == 2 and "--max-observation-chars" in refused.output
    with pytest.raises(ValueError, match="max_observation_chars must be at least 1"):
        _Wider(max_observation_chars=0)
    assert "max_observation_chars" in shown_settings("eval", _Wider)


def test_the_cli_turns_paths_lists_and_schemas_into_the_fields_values(tmp_path: Path) -> None:
    schema = tmp_path / "answer.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}}))
    corpus = tmp_path / "wiki.jsonl"
    arguments = ["-t", "calc,files", "-t", "wiki", "--project", str(tmp_path)]
    arguments += ["--corpus", str(corpus), "--output-schema", str(schema)]
    arguments += ["--allow-net", "mcp", "--pass-env", "HOME"]
    outcome = CliRunner().invoke(_probe_command(RunConfig()), arguments)
    assert outcome.exit_code == 0, outcome.output
    data = json.loads(outcome.output)
    assert data["tools"] == ["calc", "files", "wiki"]
    assert data["project"] == str(tmp_path.resolve()) and data["corpus"] == str(corpus.resolve())
    assert data["output_schema"]["properties"] == {"n": {"type": "integer"}}
    assert (data["network"], data["pass_env"]) == (["mcp"], ["HOME"])
    default = json.loads(CliRunner().invoke(_probe_command(RunConfig()), []).output)
    assert default["project"] == str(Path.cwd().resolve())  # the command line's default: .


def test_the_budget_is_built_from_runconfigs_fields_and_declares_no_default() -> None:
    """No limit's default or range is written twice: Budget has none of its own."""
    budget_fields = dataclasses.fields(Budget)
    assert all(f.default is dataclasses.MISSING for f in budget_fields)
    assert {f.name for f in budget_fields} <= set(FIELDS)
    config = RunConfig(max_steps=3, max_seconds=9.5, max_tokens=77, max_cost_usd=0.25)
    budget = Budget.of(config)
    assert [getattr(budget, f.name) for f in budget_fields] == [3, 9.5, 77, 0.25]


def test_a_misspelled_agent_setting_fails_at_construction_with_a_suggestion(
    tmp_path: Path,
) -> None:
    """Not at run time, and not silently: the nearest setting is named. It is a TypeError,
    as Python's own for a wrong keyword, and a ConfigError, as tao's for a bad setting."""
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["Action: finish[4]"]))
    with pytest.raises(UnknownSettingError) as caught:
        Agent(f"replay:{script}", record=False, max_step=5)  # type: ignore[call-arg]
    assert str(caught.value) == "unknown setting 'max_step'; did you mean 'max_steps'?"
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, ConfigError)
    with pytest.raises(TypeError, match=r"unknown setting 'colour'; the settings are .*max_steps"):
        Agent(f"replay:{script}", record=False, colour="red")  # type: ignore[call-arg]
    agent = Agent(f"replay:{script}", record=False, max_steps=5, project=tmp_path)
    assert agent.config.max_steps == 5 and agent.config.project == str(tmp_path.resolve())
    assert Agent(f"replay:{script}", config=RunConfig(max_steps=2)).config.max_steps == 2
    assert tao.UnknownSettingError is UnknownSettingError


def test_the_agents_keywords_are_runconfigs_fields() -> None:
    """``Settings`` (what a type checker sees of ``Agent(**settings)``) and the keywords the
    agent accepts at run time are RunConfig's fields, with the same types: a new field
    fails here until its line is added (mypy needs the TypedDict written out)."""
    own = {"model", "tools"}  # the Agent's first two arguments
    extra = {"output_type"}  # a live object, recorded as output_schema
    assert set(KEYWORDS) == set(FIELDS) - own | extra
    hints = typing.get_type_hints(RunConfig)
    keywords = typing.get_type_hints(Settings)
    missing = [f"    {n}: {FIELDS[n].type}" for n in FIELDS if n not in keywords and n not in own]
    assert not missing, "add to tao.state.config.Settings:\n" + "\n".join(missing)
    assert set(keywords) == set(KEYWORDS)
    widened = {"project", "corpus"}  # paths: os.PathLike too, stored absolute
    for name in set(keywords) - extra - widened:
        assert keywords[name] == hints[name], name
    for name in widened:
        assert set(typing.get_args(hints[name])) <= set(typing.get_args(keywords[name]))


def test_a_setting_a_person_gives_each_time_is_neither_recorded_nor_read_back() -> None:
    """``trust_project_policy`` (SPEC S3) is a person's word for one command: the run log
    never holds it, so a forged or stale log cannot make a resumed run trust a policy file,
    and ``tao resume`` shows it as an option (the only run setting it shows)."""
    assert "trust_project_policy" not in RunConfig(trust_project_policy=True).to_json()
    forged = {**RunConfig().to_json(), "trust_project_policy": True}
    assert RunConfig.from_json(forged).trust_project_policy is None
    assert list(shown_settings("resume")) == ["trust_project_policy"]
    assert all(spec.recorded is False for spec in shown_settings("resume").values())


@pytest.mark.parametrize(
    ("arguments", "env", "said"),
    [
        ([], {}, None),
        (["--trust-project-policy"], {}, True),
        ([], {"TAO_TRUST_PROJECT_POLICY": "1"}, True),
        ([], {"TAO_TRUST_PROJECT_POLICY": "0"}, False),
    ],
)
def test_a_yes_flag_is_unsaid_unless_given_or_set_in_the_environment(
    arguments: list[str], env: dict[str, str], said: bool | None
) -> None:
    """A ``bool | None`` setting's flag: absent leaves it ``None`` (the library then reads
    the environment itself), the flag or its variable says yes, the variable may say no."""

    @click.command()
    @setting_options("resume")
    def probe(**options: object) -> None:
        values = config_values(split_options(options, "resume")[0])
        click.echo(repr(RunConfig(**values).trust_project_policy))  # type: ignore[arg-type]

    outcome = CliRunner().invoke(probe, arguments, env=env)
    assert outcome.exit_code == 0, outcome.output
    assert outcome.output.strip() == repr(said)


def test_the_sandbox_mode_is_declared_once_as_a_process_setting() -> None:
    """``--sandbox`` (SPEC S10) is the process's, not a run's: a field of ProcessSettings,
    from which ``tao run`` derives its choices, default, variable and help; any case is
    taken on the command line, and the library refuses what the option refuses."""
    spec = shown_settings("run", ProcessSettings)["sandbox"]
    option = _params(main.commands["run"])["sandbox"]
    assert option.envvar == MODE_ENV == "TAO_SANDBOX"
    assert option.default == ProcessSettings().sandbox == "auto"
    assert isinstance(option.type, click.Choice) and tuple(option.type.choices) == MODES
    assert option.help == spec.help and spec.recorded is False
    with pytest.raises(ValueError, match="sandbox must be auto, require or off"):
        ProcessSettings(sandbox="nope")  # type: ignore[arg-type]

    @click.command()
    @setting_options("run", ProcessSettings())
    def probe(**options: object) -> None:
        values = config_values(split_options(options, "run", ProcessSettings)[0], ProcessSettings)
        click.echo(ProcessSettings(**values).sandbox)  # type: ignore[arg-type]

    runner = CliRunner()
    assert runner.invoke(probe, ["--sandbox", "REQUIRE"]).output.strip() == "require"
    assert runner.invoke(probe, [], env={"TAO_SANDBOX": "off"}).output.strip() == "off"
    assert runner.invoke(probe, []).output.strip() == "auto"
    assert runner.invoke(probe, ["--sandbox", "sometimes"]).exit_code == 2


def test_submit_takes_the_run_settings_but_those_a_person_gives_each_time() -> None:
    """``tao submit`` (issue 28) takes ``tao run``'s options, derived the same way; a setting
    that is never recorded (``--trust-project-policy``) is not among them: a worker runs the
    task later, from the run log, where that word of the person's is not kept."""
    submit, run = _params(main.commands["submit"]), _params(main.commands["run"])
    recorded = {name for name, spec in shown_settings("run").items() if spec.recorded}
    assert recorded <= set(submit)
    assert all(submit[name].opts == run[name].opts for name in recorded)
    assert "trust_project_policy" in run and "trust_project_policy" not in submit
