"""Red team, a KNOWN secret in disguise (SPEC S5, S8; issue 26 items 4 and 7).

A value tao handed out (``--pass-env MY_SETTING``) is printed by a sandboxed test not as
itself but encoded: base64 twice, base32, hex with ``:`` between bytes, URL-encoded,
reversed, letter by letter, cut across two JSON string fields. tao knows the value, so it
precomputes those forms once (:mod:`tao.redact.known_forms`) and every channel hides
them: the model's next request (a real HTTP server on 127.0.0.1), ``--json``, ``runs
show``, ``runs export`` and every file under ``TAO_HOME`` (the SQLite run log included)
but the owner-only ``private/`` copies. Real ``tao`` subprocesses, real pytest, real files.

Shapes only: none of these is a real credential.
"""

from __future__ import annotations

import base64
import codecs
import gzip
import json
import random
import string
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.security.stored import home_files

from tao.redact import REDACTED, redact
from tao.redact.known import MIN_PART, remember, seam

VALUE = "Zq7hunter2horse"

#: Each: how a test prints the value (Python, ``v`` is the value), and how the
#: same disguise is computed here to look for it in the output.
DISGUISES: dict[str, tuple[str, Callable[[str], str]]] = {
    "base64 twice": (
        "base64.b64encode(base64.b64encode(v.encode())).decode()",
        lambda v: base64.b64encode(base64.b64encode(v.encode())).decode(),
    ),
    "base64 twice, urlsafe, inside a document": (
        'base64.urlsafe_b64encode(base64.b64encode(("cfg=" + v).encode())).decode()',
        lambda v: base64.urlsafe_b64encode(base64.b64encode(("cfg=" + v).encode())).decode(),
    ),
    "base32": (
        "base64.b32encode(v.encode()).decode()",
        lambda v: base64.b32encode(v.encode()).decode(),
    ),
    "base32 lower, at an offset": (
        'base64.b32encode(("k:" + v).encode()).decode().lower()',
        lambda v: base64.b32encode(("k:" + v).encode()).decode().lower(),
    ),
    "hex with colons": (
        '":".join(f"{b:02x}" for b in v.encode())',
        lambda v: ":".join(f"{b:02x}" for b in v.encode()),
    ),
    "hex upper with spaces": (
        '" ".join(f"{b:02X}" for b in v.encode())',
        lambda v: " ".join(f"{b:02X}" for b in v.encode()),
    ),
    "url-encoded every byte": (
        '"".join(f"%{b:02X}" for b in v.encode())',
        lambda v: "".join(f"%{b:02X}" for b in v.encode()),
    ),
    "reversed": ("v[::-1]", lambda v: v[::-1]),
    "spaced letters": ('" ".join(v)', lambda v: " ".join(v)),
    "dotted letters": ('".".join(v)', lambda v: ".".join(v)),
    "rot13": ('codecs.encode(v, "rot13")', lambda v: codecs.encode(v, "rot13")),
    "split across two JSON fields": (
        'json.dumps({"head": v[:6], "tail": v[6:]})',
        lambda v: json.dumps({"head": v[:6], "tail": v[6:]}),
    ),
    "split across a JSON list": (
        "json.dumps([v[:5], v[5:10], v[10:]])",
        lambda v: json.dumps([v[:5], v[5:10], v[10:]]),
    ),
}

#: The same alphabet of 85 digits as ``base64.b85encode``, and as Z85 writes them.
B85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
#: ``rot(v, n, d)``: letters turned by ``n``, digits by ``d`` (printed by the test as well).
ROT = (
    "def rot(v, n, d=0):\n"
    "    return ''.join(chr((ord(c) - 97 + n) % 26 + 97) if 'a' <= c <= 'z' else"
    " chr((ord(c) - 65 + n) % 26 + 65) if 'A' <= c <= 'Z' else"
    " chr((ord(c) - 48 + d) % 10 + 48) if '0' <= c <= '9' else c for c in v)\n"
)
_SCOPE: dict[str, Any] = {"base64": base64, "zlib": zlib, "gzip": gzip, "B85": B85, "Z85": Z85}
exec(ROT, _SCOPE)


def _same(code: str) -> tuple[str, Callable[[str], str]]:
    """A disguise printed by ``code`` in the test and computed by the same code here."""
    return code, eval(f"lambda v: {code}", _SCOPE)


#: Issue 26, round 4: the disguises that docs/security.md listed as passing.
MORE_DISGUISES: dict[str, tuple[str, Callable[[str], str]]] = {
    "upper-cased": _same("v.upper()"),
    "case swapped": _same("v.swapcase()"),
    "rot-7": _same("rot(v, 7)"),
    "rot-19, digits turned by 3": _same("rot(v, 19, 3)"),
    "rot-4 reversed upper-cased": _same("rot(v, 4)[::-1].upper()"),
    "ascii85": _same("base64.a85encode(v.encode()).decode()"),
    "base85 at an offset": _same('base64.b85encode(("key=" + v).encode()).decode()'),
    "z85": _same("base64.b85encode(v.encode()).decode().translate(str.maketrans(B85, Z85))"),
    "reversed base64": _same("base64.b64encode(v.encode()).decode()[::-1]"),
    "base64 of the hex": _same("base64.b64encode(v.encode().hex().encode()).decode()"),
    "hex of the base64": _same("base64.b64encode(v.encode()).hex()"),
    "base32 of the hex": _same("base64.b32encode(v.encode().hex().upper().encode()).decode()"),
    "xor 0x5a, hex": _same("bytes(b ^ 0x5A for b in v.encode()).hex()"),
    "xor 0x13, hex with colons": _same('":".join(f"{b ^ 0x13:02x}" for b in v.encode())'),
    "xor 0xc7, base64 after a header": _same(
        'base64.b64encode(b"hdr:" + bytes(b ^ 0xC7 for b in v.encode())).decode()'
    ),
    "xor 0x20, urlsafe base64": _same(
        "base64.urlsafe_b64encode(bytes(b ^ 0x20 for b in v.encode())).decode()"
    ),
    "zlib, base64": _same("base64.b64encode(zlib.compress(v.encode(), 9)).decode()"),
    "gzip, base64": _same("base64.b64encode(gzip.compress(v.encode())).decode()"),
    "raw deflate level 1, hex": _same(
        "(lambda c: (c.compress(v.encode()) + c.flush()).hex())"
        "(zlib.compressobj(1, zlib.DEFLATED, -15))"
    ),
}
DISGUISES.update(MORE_DISGUISES)


pytestmark = pytest.mark.usefixtures("clean_known_registry")


@pytest.mark.parametrize("name", sorted(DISGUISES))
def test_a_known_value_printed_in_disguise_leaves_through_no_channel_S5(
    name: str, tao_cli: Any, tao_home: Path, chat_server: Any, tmp_path: Path
) -> None:
    """A sandboxed test prints the ``--pass-env`` value in disguise; no output channel
    (the model's request, ``--json``, ``runs show``, ``runs export``, the run log on disk)
    holds the disguised form."""
    code, disguise = DISGUISES[name]
    project = tmp_path / "proj"
    project.mkdir()
    (project / "test_env.py").write_text(
        "import base64, codecs, gzip, json, os, zlib\n\n"
        f"B85 = {B85!r}\nZ85 = {Z85!r}\n{ROT}\n"
        "def test_env():\n"
        '    v = os.environ["MY_SETTING"]\n'
        f"    print('out:', {code})\n"
        "    assert False\n"
    )
    chat_server.replies.extend(["Action: run_tests[test_env.py]", "Action: finish[done]"])
    out = tao_cli(
        "run", "run the tests", "--model", "openai:m", "--base-url", chat_server.base_url,
        "--protocol", "text", "--tools", "tests", "--project", str(project),
        "--pass-env", "MY_SETTING", "--json", env={"MY_SETTING": VALUE},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run_id = json.loads(out.stdout)["run_id"]
    observation = json.loads(out.stdout)["steps"][0]["observation"]
    assert "out:" in observation and REDACTED in observation  # it ran, and was read
    shown = {
        "--json": out.stdout + out.stderr,
        "model request": json.dumps(chat_server.requests),
        "runs show --json": tao_cli("runs", "show", run_id, "--json").stdout,
        "export": tao_cli("runs", "export", run_id).stdout,
        "export --full": tao_cli("runs", "export", run_id, "--full").stdout,
    }
    disguised = disguise(VALUE)
    # A JSON channel escapes quotes: look for the disguise as written there too.
    needles = {disguised, json.dumps(disguised)[1:-1], VALUE}
    leaks = [(n, k) for k, text in shown.items() for n in needles if n in text]
    leaks += [
        (n, k) for k, data in home_files(tao_home).items() for n in needles if n.encode() in data
    ]
    assert leaks == [], leaks


@pytest.mark.parametrize("name", sorted(DISGUISES))
@pytest.mark.parametrize("value", ["Zq7hunter2horse", "p@ss/w0rd:Kx9!", "Ünïcødé-sëcret-42"])
@pytest.mark.parametrize("around", ["{}", "log line: {} (end)", "x{}y", '{{"k": {}}}'])
def test_every_disguise_of_any_known_value_anywhere_in_a_text_is_hidden_S8(
    name: str, value: str, around: str
) -> None:
    """The class, not the example: other values (punctuation, non-ASCII), other
    surroundings (glued to letters, inside JSON), each disguise."""
    remember([value])
    disguised = DISGUISES[name][1](value)
    text = around.format(disguised)
    out = redact(text)
    assert REDACTED in out, (name, value, out)
    assert disguised not in out and value not in out


def test_ordinary_text_is_untouched_while_values_are_known_S8() -> None:
    """Forms are searched, not guessed: prose, hex dumps, base64 of other data and JSON
    with short strings stay as they are while values are registered."""
    remember(["Zq7hunter2horse", "Kp4wallet9stone"])
    texts = [
        "The quick brown fox jumps over the lazy dog. 12 passed, 3 failed in 0.42s",
        ":".join(f"{b:02x}" for b in b"an ordinary MAC-like dump"),
        base64.b64encode(b"some other payload entirely" * 3).decode(),
        json.dumps({"head": "hello", "tail": "world", "n": [1, 2, 3]}),
        " ".join("an ordinary sentence spelled out"),
    ]
    for text in texts:
        assert redact(text) == text


#: A provider-shaped token (found by shape) and a secret-named variable's value (known).
SHAPED = "ghp_" + "Ab3Xy9" * 6
BAD_ARGUMENTS = {
    "not an integer": ["run", "x", "--max-steps", "{secret}"],
    "not a choice": ["runs", "export", "r1", "--format", "{secret}"],
    "no such run": ["runs", "show", "{secret}"],
    "not a number": ["run", "x", "--max-cost", "{secret}"],
    "no such option": ["run", "x", "--{secret}"],
}


@pytest.mark.parametrize("secret", [SHAPED, VALUE])
@pytest.mark.parametrize("name", sorted(BAD_ARGUMENTS))
def test_a_secret_inside_a_bad_argument_is_not_echoed_by_the_cli_error_S8(
    name: str, secret: str, tao_cli: Any
) -> None:
    """A key pasted in the wrong place (``--max-steps ghp_…``) is quoted back by click's
    usage error; the real ``tao`` prints the error redacted, on stdout and stderr.
    ``VALUE`` is known because it sits in a secret-named variable of tao's environment."""
    args = [arg.format(secret=secret) for arg in BAD_ARGUMENTS[name]]
    out = tao_cli(*args, env={"MY_API_TOKEN": VALUE})
    assert out.returncode != 0
    assert "Error" in out.stderr + out.stdout
    assert secret not in out.stdout + out.stderr, out.stderr


def _random_values(seed: int, count: int) -> list[str]:
    """Values of 12 to 40 characters: letters, digits and punctuation, seeded."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "-_.:/@+=!"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(12, 40))) for _ in range(count)]


@pytest.mark.parametrize("seed", range(6))
def test_every_disguise_of_random_values_inside_prose_is_hidden_S8(seed: int) -> None:
    """The class, not the example: twenty values of other lengths and alphabets, all known
    at once, each disguise of each at a random place inside prose."""
    values = _random_values(seed, 20)
    remember(values)
    rng = random.Random(seed)
    prose = "The quick brown fox jumps over the lazy dog. 12 passed in 0.42s\n" * 20
    for name, (_, disguise) in DISGUISES.items():
        for value in values:
            disguised = disguise(value)
            cut_at = rng.randrange(len(prose))
            out = redact(prose[:cut_at] + " " + disguised + " " + prose[cut_at:])
            assert REDACTED in out and disguised not in out, (name, value, disguised)


def test_many_known_values_leave_other_data_untouched_S8() -> None:
    """Twenty known values and their hundreds of forms hide nothing of prose (in any
    case, ROT-ed), hex dumps, base64, base85, gzip of other data."""
    remember(_random_values(99, 20))
    rng = random.Random(5)
    noise = [bytes(rng.randrange(256) for _ in range(64)) for _ in range(40)]
    sentence = "The quick brown fox jumps over the lazy dog, 12 passed, 3 failed in 0.42s."
    texts = [
        sentence,
        sentence.upper(),
        codecs.encode(sentence, "rot13"),
        "\n".join(chunk.hex(":") for chunk in noise),
        "\n".join(base64.b64encode(chunk).decode() for chunk in noise),
        "\n".join(base64.a85encode(chunk).decode() for chunk in noise),
        "\n".join(base64.b32encode(chunk).decode() for chunk in noise),
        base64.b64encode(gzip.compress(sentence.encode() * 50, mtime=0)).decode(),
        base64.b64encode(zlib.compress(b"".join(noise))).decode(),
    ]
    for text in texts:
        assert redact(text) == text, text[:80]


#: A value cut in two across two observations of one run: how each half is written.
SEAMS: dict[str, Callable[[str], tuple[str, str]]] = {
    "verbatim": lambda v: (f"config: {v[:6]}\n", f"{v[6:]} is the rest"),
    "verbatim, first part short": lambda v: (f"x = {v[:3]}", f"{v[3:]}\nok"),
    "hex with colons": lambda v: (
        "dump " + ":".join(f"{b:02x}" for b in v.encode()[:5]),
        ":" + ":".join(f"{b:02x}" for b in v.encode()[5:]) + " end",
    ),
    "base64": lambda v: (
        "b64 " + base64.b64encode(v.encode()).decode()[:9],
        base64.b64encode(v.encode()).decode()[9:] + "\n",
    ),
    "upper-cased": lambda v: (f"key {v.upper()[:7]}", f"{v.upper()[7:]}."),
}


@pytest.mark.parametrize("name", sorted(SEAMS))
@pytest.mark.parametrize("value", ["Zq7hunter2horse", "p@ss/w0rd:Kx9!", "Ünïcødé-sëcret-42"])
def test_a_known_value_cut_across_two_observations_is_hidden_S8(name: str, value: str) -> None:
    """The second observation is read after the end of the first (as it was before
    anything was hidden in it): the rest of the value is hidden, in any of its forms; a
    verbatim first part dangling at the end of an observation is hidden too."""
    remember([value])
    first, second = SEAMS[name](value)
    shown_first = seam("", first)
    shown_second = seam(first, second)
    assert REDACTED in shown_second, (name, value, shown_second)
    assert second.rstrip("\n .") not in shown_second
    if name.startswith("verbatim") and len(first.split()[-1]) >= MIN_PART:
        assert REDACTED in shown_first and first.split()[-1] not in shown_first


def test_an_observation_after_an_ordinary_one_is_untouched_S8() -> None:
    """Nothing is hidden at a seam that holds no known value: ordinary ends and starts,
    a value's later part after an unrelated end, a value's short first part."""
    remember(["Zq7hunter2horse"])
    pairs = [
        ("The end of a file.\n", "ter2horse? no: just ter text"),
        ("12 passed in 0.42s", "hunter2 is a famous password"),
        ("a line ending in Zq7", "b line"),
    ]
    for previous, text in pairs:
        assert seam(previous, text) == text
        assert seam("", previous) == previous


def test_a_known_value_read_in_two_halves_by_a_real_run_leaves_no_channel_S8(
    tao_cli: Any, tao_home: Path, chat_server: Any, tmp_path: Path
) -> None:
    """The model reads two files, one ending with the value's first part and one starting
    with the rest: neither half reaches the model, ``--json``, ``runs show``, ``runs
    export`` or the run log on disk."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.txt").write_text(f"settings\nkey: {VALUE[:7]}")
    (project / "b.txt").write_text(f"{VALUE[7:]}\nend of settings\n")
    chat_server.replies.extend(
        ["Action: read_file[a.txt]", "Action: read_file[b.txt]", "Action: finish[done]"]
    )
    out = tao_cli(
        "run", "read the settings", "--model", "openai:m", "--base-url", chat_server.base_url,
        "--protocol", "text", "--tools", "files", "--project", str(project),
        "--pass-env", "MY_SETTING", "--json", env={"MY_SETTING": VALUE},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    observations = [step["observation"] for step in result["steps"][:2]]
    assert "settings" in observations[0] and "end of settings" in observations[1]
    assert all(REDACTED in observation for observation in observations), observations
    run_id = result["run_id"]
    shown = {
        "--json": out.stdout + out.stderr,
        "model request": json.dumps(chat_server.requests),
        "runs show --json": tao_cli("runs", "show", run_id, "--json").stdout,
        "export --full": tao_cli("runs", "export", run_id, "--full").stdout,
    }
    halves = {VALUE[:7], VALUE[7:]}
    leaks = [(n, k) for k, text in shown.items() for n in halves if n in text]
    leaks += [
        (n, k) for k, data in home_files(tao_home).items() for n in halves if n.encode() in data
    ]
    assert leaks == [], leaks
