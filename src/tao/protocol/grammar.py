"""A GBNF grammar that makes a ReAct reply well-formed by construction.

Backends that support grammar-constrained decoding (the embedded llama.cpp
model) can only produce text this grammar accepts: one thought line, then
either exactly one ``Action: tool[argument]`` naming a tool of this run, or a
final-answer line. Generation ends right after the closing ``]`` (or at the end
of the answer line), so the model cannot invent its own Observation.

    >>> from tao.protocol.labels import get_labels
    >>> print(react_grammar(get_labels("en"), ["calculator"]).splitlines()[0])
    root ::= thought "\\n" ( action | answer )
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from tao.protocol.labels import Labels
from tao.state.jsontypes import JSONObject

__all__ = [
    "DEFAULT_MAX_ARGUMENT_CHARS",
    "DEFAULT_MAX_THOUGHT_CHARS",
    "check_grammar",
    "gbnf_literal",
    "react_grammar",
]


def gbnf_literal(text: str) -> str:
    """Quote ``text`` as a GBNF string literal (UTF-8 passes through as-is)."""
    escaped = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


#: Default bounds, in characters, of the thought and of an argument or answer. Together
#: they stay under the loop's 512-token reply limit even where one character is one token.
DEFAULT_MAX_THOUGHT_CHARS = 240
DEFAULT_MAX_ARGUMENT_CHARS = 200


def _bounded(item: str, low: int, high: int | None) -> str:
    if high is None:
        return f"{item}{'+' if low else '*'}"
    return f"{item}{{{low},{max(low, high, 1)}}}"


def react_grammar(
    labels: Labels,
    tool_names: Sequence[str],
    *,
    require_thought: bool = True,
    max_thought_chars: int | None = DEFAULT_MAX_THOUGHT_CHARS,
    max_argument_chars: int | None = DEFAULT_MAX_ARGUMENT_CHARS,
    answer_schema: JSONObject | None = None,
    schemas: Mapping[str, JSONObject] | None = None,
    paths: Collection[str] = (),
) -> str:
    """Return the GBNF grammar for one ReAct step in the language of ``labels``.

    ``schemas`` (a tool's name to its arguments' JSON schema) makes each tool of several
    parameters take them by name, ``write_file[path="a.txt", content="3"]``: its required
    parameters in order, then any optional ones, strings quoted (issue 30: a small model
    otherwise writes ``write_file[a.txt, 3]``, which binds to nothing). A tool of one
    parameter keeps the free argument, unless it is in ``paths`` (see :func:`_keyed_rules`).

    With ``answer_schema`` (typed answers, SPEC L13) the answer, in ``finish[...]`` or
    on the answer line, can only be JSON matching it (llama.cpp's own converter).

    ``tool_names`` are the tools of this run; ``finish`` is always added. With
    ``require_thought=False`` (the paper's *Act* strategy) the reply is the action or answer.

    ``max_thought_chars`` and ``max_argument_chars`` bound the free text (the
    answer line shares the argument bound); ``None`` leaves it unbounded. The
    bounds are what make a well-formed reply certain: a small model at
    temperature 0 can otherwise repeat itself inside the thought line until
    ``max_tokens`` cuts it off before any Action.
    """
    names: list[str] = []
    for name in [*tool_names, "finish"]:
        if name and name not in names:
            names.append(name)
    # Longest first: the order does not change what is accepted, but keeps the text stable.
    names.sort(key=lambda n: (-len(n), n))
    tools = " | ".join(gbnf_literal(n) for n in names)

    thought_text = _bounded("[^\\n]", 1, max_thought_chars)
    argument_text = _bounded("[^\\n\\]]", 0, max_argument_chars)
    answer_text = _bounded("[^\\n]", 1, max_argument_chars)

    typed = _answer_rules(answer_schema) if answer_schema is not None else []
    if typed:
        names.remove("finish")
        tools = " | ".join(gbnf_literal(n) for n in names)
    keyed = _keyed_rules(names, schemas or {}, max_argument_chars, paths)
    if keyed:
        plain = [n for n in names if n not in keyed[0]]
        calls = ['tool "[" argument "]"'] if plain else []
        calls += [
            f"{gbnf_literal(n + '[')} {rule} {gbnf_literal(']')}" for n, rule in keyed[0].items()
        ]
        tools = " | ".join(gbnf_literal(n) for n in plain)
    decision = "( action | answer )"
    root = f'root ::= thought "\\n" {decision}' if require_thought else f"root ::= {decision}"
    lines = [
        root,
        f"thought ::= {gbnf_literal(labels.thought + ': ')} {thought_text}",
        f'action ::= {gbnf_literal(labels.action + ": ")} tool "[" argument "]"',
        f"tool ::= {tools}",
        # Anything but a newline or a closing bracket; may be empty (e.g. ``finish[]``).
        f"argument ::= {argument_text}",
        f"answer ::= {gbnf_literal(labels.answer + ': ')} {answer_text}",
    ]
    if keyed:
        lines[2] = f"action ::= {gbnf_literal(labels.action + ': ')} ( {' | '.join(calls)} )"
        if not plain:
            del lines[3]
        lines += keyed[1]
    if typed:
        finish_call = '"finish[" answer-json "]"'
        call = f'( tool "[" argument "]" | {finish_call} )' if names else finish_call
        at = {line.split(" ::= ")[0]: i for i, line in enumerate(lines)}
        lines[at["action"]] = f"action ::= {gbnf_literal(labels.action + ': ')} {call}"
        lines[at["answer"]] = f"answer ::= {gbnf_literal(labels.answer + ': ')} answer-json"
        if not names:  # finish is the only tool: no other calls to describe
            lines = [line for line in lines if line.split(" ::= ")[0] not in ("tool", "argument")]
    return "\n".join([*lines, *typed]) + "\n"


def _keyed_rules(
    names: list[str],
    schemas: Mapping[str, JSONObject],
    max_chars: int | None,
    paths: Collection[str] = (),
) -> tuple[dict[str, str], list[str]]:
    """The arguments rule of each tool of several parameters (by tool name), and the rules
    themselves: required parameters in order, then each optional one, ``name=value``.

    A tool in ``paths`` (one parameter, a project path) takes ``path="..."`` or a bare path
    without ``,``, ``=`` or ``:``: the embedded model otherwise glues a line number or a
    keyword to the path (``read_file[poem.txt, line=2]``), which names no file.
    """
    rules: dict[str, str] = {}
    lines: list[str] = []
    for name in names:
        properties = schemas.get(name, {}).get("properties")
        if name == "finish" or not isinstance(properties, dict):
            continue
        if len(properties) == 1 and name in paths:
            rules[name] = f"args-{len(rules)}"
            key = gbnf_literal(f"{next(iter(properties))}=")
            lines.append(f"{rules[name]} ::= {key} qstr | path-text")
            continue
        if len(properties) < 2:
            continue
        listed = schemas[name].get("required")
        required = [p for p in properties if isinstance(listed, list) and p in listed]
        parts: list[str] = []
        for param in [*required, *(p for p in properties if p not in required)]:
            key = gbnf_literal((", " if parts else "") + f"{param}=")
            pair = f"{key} {_value(properties[param])}"
            parts.append(pair if param in required else f"( {pair} )?")
        rules[name] = f"args-{len(rules)}"
        lines.append(f"{rules[name]} ::= {' '.join(parts)}")
    if not rules:
        return {}, []
    char = '( [^"\\\\\\n] | "\\\\" ["\\\\nt] )'
    return rules, [
        *lines,
        f'qstr ::= "\\"" {_bounded(char, 0, max_chars)} "\\""',
        'value ::= qstr | "-"? [0-9]{1,15} ( "." [0-9]{1,10} )? | "True" | "False" | "None"',
        "path-text ::= " + _bounded(_PATH_CHAR, 0, max_chars),
    ]


#: A character of a bare path: no line break, no closing bracket, nothing that glues more.
_PATH_CHAR = "[^\\n\\],=:]"


def _value(schema: object) -> str:
    """A string parameter takes a quoted string; anything else any Python literal value."""
    return "qstr" if isinstance(schema, dict) and schema.get("type") == "string" else "value"


def _answer_rules(schema: JSONObject) -> list[str]:
    """llama.cpp's grammar for ``schema``, its root renamed ``answer-json``, one line each.

    The converter names its rules after the schema (``string``, ``name-kv``…), never
    after ours (``thought``, ``action``, ``tool``, ``argument``, ``answer``).
    """
    import json

    from llama_cpp.llama_grammar import json_schema_to_gbnf

    text = json_schema_to_gbnf(json.dumps(schema))
    rules = []
    for line in text.splitlines():
        if line.startswith("root ::="):
            line = "answer-json ::=" + line[len("root ::=") :]
        if line.strip():
            rules.append(line)
    return rules


def check_grammar(text: str) -> None:
    """Raise :class:`ValueError` unless llama.cpp's GBNF parser accepts ``text``.

    Needs ``llama_cpp`` (the local runtime). ``LlamaGrammar.from_string`` only
    stores the text; an invalid grammar would surface later as a NULL sampler
    inside llama.cpp, so callers check first.
    """
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(None, text.encode("utf-8"), b"root")
    if not sampler:
        raise ValueError("llama.cpp could not parse the GBNF grammar (details on stderr)")
    llama_cpp.llama_sampler_free(sampler)
