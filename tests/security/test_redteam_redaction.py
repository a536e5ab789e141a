"""Red team, redaction (SPEC S5, S8, S11; issue 26 item 4): encodings that used to pass, the
time a crafted text takes, and every surface of the web page.

Shapes only: none of these is a real credential.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tao.redact import find_secrets, redact

from ..conftest import CliResult

OPENAI = "sk-proj-" + "Qw7Er9Ty" * 6
GITHUB = "ghp_" + "Zx8Cv6Bn4M" * 4
AWS = "AKIA" + "Q7W3E5R2T9Y4U6I1"
HIDDEN = "Hq7-vP2xL9kR"  # a password-like value


def leaks(text: str, secret: str) -> bool:
    """Whether any 8-character piece of ``secret`` is still readable after redaction."""
    shown = redact(text)
    return any(secret[i : i + 8] in shown for i in range(0, max(1, len(secret) - 7), 4))


COMMAND_LINES = [
    f"mysql -h db -u root -p{HIDDEN} app",
    f"mysqldump --user=root -p'{HIDDEN}' shop > dump.sql",
    f"mariadb -uadmin -p{HIDDEN}",
    f"tool --password {HIDDEN} --verbose",
    f"tool --db-password={HIDDEN}",
    f'deploy --api-token "{HIDDEN}"',
    f"curl -u alice:{HIDDEN} https://api.example.com/",
    f"curl --user 'alice:{HIDDEN}' https://api.example.com/",
    f"Authorization: Basic {base64.b64encode(f'alice:{HIDDEN}'.encode()).decode()}",
    f"machine api.example.com login alice password {HIDDEN}",
    f"machine example.org\n  login alice\n  password {HIDDEN}\n",
]


@pytest.mark.parametrize("text", COMMAND_LINES)
def test_command_line_and_netrc_credentials_are_hidden_S8(text: str) -> None:
    secret = HIDDEN if "Basic" not in text else text.split("Basic ")[1]
    assert not leaks(text, secret), redact(text)


SIGNED_URLS = [
    "https://b.s3.amazonaws.com/k.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIAQ7W3E5R2T9Y4U6I1%2F20260101&X-Amz-Signature=9f8e7d6c5b4a3928",
    "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4&X-Goog-Signature=9f8e7d6c5b4a3928",
    "https://acct.blob.core.windows.net/c/b?sv=2022&se=2026&sp=r&sig=9f8e7d6c5b4a3928%3D",
    "https://cdn.example.com/v.mp4?expires=1&signature=9f8e7d6c5b4a3928",
    "https://api.example.com/cb?state=x&token=9f8e7d6c5b4a3928",
    "https://api.example.com/cb?access_token=9f8e7d6c5b4a3928#frag",
]


@pytest.mark.parametrize("url", SIGNED_URLS)
def test_signed_url_signatures_are_hidden_and_the_url_stays_readable_S8(url: str) -> None:
    shown = redact(f"fetch {url} now")
    assert "9f8e7d6c5b4a3928" not in shown, shown
    assert shown.startswith("fetch https://") and shown.endswith(" now")


@pytest.mark.parametrize(
    "secret",
    [OPENAI, GITHUB, AWS, "xoxb-" + "1234567890-" + "AbCdEfGhIjKl", "glpat-" + "Zx8Cv6Bn4M" * 2],
)
@pytest.mark.parametrize("encode", ["base64", "urlsafe", "hex", "labelled base64"])
def test_encoded_tokens_are_hidden_S8(secret: str, encode: str) -> None:
    raw = f"token is {secret}".encode()
    if encode == "hex":
        blob = raw.hex()
    elif encode == "urlsafe":
        blob = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    else:
        blob = base64.b64encode(raw).decode()
    text = f"config: {blob}\n" if encode == "labelled base64" else f"{blob} was logged"
    assert blob not in redact(text)
    assert not leaks(text, blob)


@pytest.mark.parametrize("width", [40, 64, 76])
def test_a_token_wrapped_at_a_column_is_hidden_S8(width: int) -> None:
    token = OPENAI + "Ab9" * 10
    lines = [token[i : i + width] for i in range(0, len(token), width)]
    text = "OPENAI_KEY=\n" + "\n".join(lines) + "\nDEBUG=true\n"
    shown = redact(text)
    assert all(line not in shown for line in lines if len(line) >= 8), shown
    assert "DEBUG=true" in shown


@pytest.mark.parametrize(
    "text",
    [
        f'key = ("{OPENAI[:14]}"\n       "{OPENAI[14:]}")',
        f'key = "{OPENAI[:14]}" + "{OPENAI[14:]}"',
        f"key = '{OPENAI[:20]}' \\\n      '{OPENAI[20:]}'",
        f'key = "{OPENAI[:20]}\\\n{OPENAI[20:]}"',
    ],
)
def test_a_token_split_into_string_pieces_is_hidden_S8(text: str) -> None:
    shown = redact(text)
    assert OPENAI[14:] not in shown and OPENAI[20:] not in shown, shown


#: One maker per provider shape: a token of that shape whose body is drawn from ``seed``.
GLUED_MAKERS: dict[str, Callable[[str], str]] = {
    "github": lambda b: "ghp_" + (b * 8)[:36],
    "github fine-grained": lambda b: "github_pat_" + (b * 12)[:22] + "_" + (b * 12)[:59],
    "gitlab": lambda b: "glpat-" + (b * 8)[:20],
    "npm": lambda b: "npm_" + (b * 8)[:36],
    "openai": lambda b: "sk-proj-" + (b * 8)[:48],
    "pypi": lambda b: "pypi-" + (b * 12)[:60],
    "stripe": lambda b: "sk_live_" + (b * 8)[:24],
    "google": lambda b: "AIza" + (b * 8)[:35],
    "hugging face": lambda b: "hf_" + (b * 8)[:34],
    "aws": lambda b: "AKIA" + (b.upper() * 8)[:16],
}
GLUED_BODIES = ("Qw7Er9Ty2U", "Zx8Cv6Bn4M", "Lk3Jh5Gf1D", "Pm9Nb2Vc7X")


@pytest.mark.parametrize("kind", sorted(GLUED_MAKERS))
@pytest.mark.parametrize("count", [2, 3, 4])
def test_tokens_glued_end_to_end_leave_nothing_readable_S8(kind: str, count: int) -> None:
    """S8: tokens of one shape glued with no separator (a pasted list, a concatenated
    config value) are each hidden in full; a shape whose body alphabet lacks its prefix's
    ``_`` or ``-`` used to stop one token in and leave the next one's body readable."""
    tokens = [GLUED_MAKERS[kind](body) for body in GLUED_BODIES[:count]]
    for token in tokens:
        assert not leaks("key " + "".join(tokens) + " end", token), (kind, token)


@pytest.mark.parametrize(
    "line",
    [
        "FOO=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "export SERVICE_X='Zq8xW2pL0vN7mK4jR6tY'",
        "  upstream_value: aG93ZHkgcGFydG5lcjEyMzQ1Njc4",
    ],
)
def test_unlabelled_random_values_in_env_lines_are_hidden_S8(line: str) -> None:
    value = line.split("=", 1)[-1].split(": ", 1)[-1].strip("'")
    assert value not in redact(line + "\n")


@pytest.mark.parametrize(
    "line",
    [
        "NODE_ENV=production",
        "SERVICE_NAME=payments_service_v2_build_17",
        "RELEASE=2024-05-01",
        "VERSION=1.22.333.4444",
        "REQUEST_ID=123e4567-e89b-12d3-a456-426614174000",
        "HOME=/home/alice/projects/tao/src",
        "TIMEOUT=1234567890123456",
        "commit: 1c9e0f4d2b6a8e7f3a5c1d9b0e2f4a6c8d0e1f2a",
    ],
)
def test_words_paths_numbers_uuids_and_commit_ids_are_left_alone(line: str) -> None:
    """Decided: UUIDs and commit ids are identifiers far more often than keys."""
    if line.startswith("commit"):
        assert redact("commit 1c9e0f4d2b6a8e7f3a5c1d9b0e2f4a6c8d0e1f2a\n") == (
            "commit 1c9e0f4d2b6a8e7f3a5c1d9b0e2f4a6c8d0e1f2a\n"
        )
        return
    assert redact(line + "\n") == line + "\n"


# -- time: one pass, linear in the text's length (SPEC S11) ------------------------------

CRAFTED: dict[str, Callable[[int], str]] = {
    "token run": lambda n: ("aZ9" * n)[:n],
    "labels": lambda n: ("password=" * n)[:n],
    "short labels": lambda n: ("pw: x, " * n)[:n],
    "colons": lambda n: ("a:b=c:" * n)[:n],
    "urls": lambda n: ("://u:p" * n)[:n],
    "near misses": lambda n: ("sk- ghp_ AKIA xoxb- eyJ. -----BEGIN PRIVATE KEY----- " * n)[:n],
    "nested quotes": lambda n: ('"\'`"key=\'"' * n)[:n],
    "base64": lambda n: base64.b64encode(bytes(range(256)) * (n // 300 + 1)).decode()[:n],
    "mysql": lambda n: ("mysql -px " * n)[:n],
    "string pieces": lambda n: ('"abcdefghijklmnopq" "' * n)[:n],
}


@pytest.mark.parametrize("shape", CRAFTED)
def test_a_crafted_2mb_text_redacts_in_bounded_time_S11(shape: str) -> None:
    """Issue 26: one crafted 2 MB file took 267 s. Generous bound for a shared test box."""
    text = CRAFTED[shape](2_000_000)
    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 20.0


@pytest.mark.parametrize("shape", ["token run", "labels", "near misses", "nested quotes"])
def test_redaction_time_grows_linearly_S11(shape: str) -> None:
    """Four times the text takes about four times as long, not sixteen (ratio bound)."""

    def seconds(size: int) -> float:
        text = CRAFTED[shape](size)
        best = float("inf")
        for _ in range(2):
            started = time.perf_counter()
            find_secrets(text)
            best = min(best, time.perf_counter() - started)
        return best

    small, large = seconds(250_000), seconds(1_000_000)
    assert large / max(small, 1e-3) < 8.0, (small, large)


#: Dense real secrets, each shape with the value planted in it (issue 26: crafted 10 MB).
DENSE_SECRETS = {
    "short labels": ("pw: {} ", "hunter2x{:06d}"),
    "json labels": ('"password": "{}", ', "s3cr3t{:06d}"),
    "options": ("--token {} ", "tok{:06d}zz"),
    "env lines": ("CONF_VALUE={}\n", "9f8e7d6c5b4a{:06d}f5e4d3c2b1a0"),
    "provider tokens": ("k={} ", "ghp_" + "a1B2c3D4e5" * 3 + "{:06d}"),
}


@pytest.mark.parametrize("shape", DENSE_SECRETS)
def test_a_10mb_text_of_dense_secrets_hides_every_one_in_bounded_time_S11(shape: str) -> None:
    """Issue 26: a 10 MB observation packed with real secrets redacts in bounded time
    (dense blocks may be hidden whole) and none of the planted values survives."""
    piece, secret = DENSE_SECRETS[shape]
    parts: list[str] = []
    size = index = 0
    while size < 10_000_000:
        part = piece.format(secret.format(index))
        parts.append(part)
        size += len(part)
        index += 1
    text = "".join(parts)
    started = time.perf_counter()
    out = redact(text)
    elapsed = time.perf_counter() - started
    left = re.search(re.escape(secret).replace(re.escape("{:06d}"), r"\d{6}"), out)
    assert left is None, left
    assert index > 200_000
    # Bound for a shared, loaded 2-core test box (dense provider tokens are the slowest).
    assert elapsed < 30.0, elapsed


def test_a_run_reading_huge_crafted_files_ends_as_a_spent_budget_L1_S11(
    tao_cli: Callable[..., CliResult], replay: Callable[[list[str]], Path], tmp_path: Path
) -> None:
    """Issue 26: a tool (``read_file``, in-process Python) that returns 2 MB of crafted text,
    dense with secrets, at every step does not keep a run past ``--max-seconds`` in
    redaction: the run ends as a spent budget (SPEC L1, exit 3) within a few seconds of its
    limit, and nothing planted reaches the output (the kept end is redacted before the cut,
    with a margin past it: tao.redact.kept). Each read now costs milliseconds, so the run
    has thousands of replies and no repeat or token limit to end it first."""
    for n in range(4):
        (tmp_path / f"dump{n}.txt").write_text(
            f"pw: hunter{n}x0000001 --token t{n}000001zz API_{n}=9f8e7d6c5b4a3928170{n}f5e4d\n"
            * 40_000,
            encoding="utf-8",
        )
    steps = 3_000  # more than 3 s of steps, however fast each is (a read is cut first)
    script = replay([f"Thought: more.\nAction: read_file[dump{n % 4}.txt]" for n in range(steps)])
    started = time.monotonic()
    out = tao_cli(
        "run", "read them", "-m", f"replay:{script}", "-t", "files", "--project", str(tmp_path),
        "--max-steps", str(steps), "--max-repeats", str(steps), "--max-tokens", str(10**15),
        "--max-seconds", "3",
        "--no-input", "--json", timeout=120,
    )  # fmt: skip
    took = time.monotonic() - started
    data = json.loads(out.stdout)
    assert out.returncode == 3, out.stderr[-2000:]  # a spent budget, not a failure
    assert data["status"] == "max_steps" and data["error"] is None
    assert "time limit of 3 s" in data["stop_reason"], data["stop_reason"]
    assert len(data["steps"]) < steps  # cut by time, not by running out of replies
    assert data["duration_s"] < 3 + 6, data["duration_s"]  # not stuck redacting
    assert took < 60, took  # the child's start and the 3 s of the run
    assert re.search(r"hunter\dx|t\d000001zz|9f8e7d6c", out.stdout) is None


_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
_PASSWORD = "hunter2Xq9Lm"


def _escaped_variants() -> dict[str, tuple[str, str]]:
    """A secret as a reader still reads it: escaped, compressed, or behind a disguised label."""
    import gzip
    import zlib

    token = _TOKEN
    return {
        "percent-every-byte": ("".join(f"%{b:02X}" for b in token.encode()), token),
        "json-u-one-letter": (json.dumps(token).replace("g", "\\u0067"), token),
        "json-u-all": ('"' + "".join(f"\\u{ord(c):04x}" for c in token) + '"', token),
        "python-x": ("\\x67" + token[1:], token),
        "html-decimal": ("".join(f"&#{ord(c)};" for c in token), token),
        "html-hex": ("".join(f"&#x{ord(c):x};" for c in token), token),
        "query-label-encoded": (f"https://x.example/?password%3D{_PASSWORD}", _PASSWORD),
        "cyrillic-a-label": (f"pаssword={_PASSWORD}", _PASSWORD),
        "greek-o-label": (f"passwοrd: {_PASSWORD}", _PASSWORD),
        "fullwidth-label": (f"ｐａｓｓｗｏｒｄ={_PASSWORD}", _PASSWORD),
        "zero-width-label": (f"pass\u200bword={_PASSWORD}", _PASSWORD),
        "soft-hyphen-label": (f"api_\u00adkey = {_PASSWORD}", _PASSWORD),
        "cyrillic-in-token": (token.replace("a", "а"), token[5:]),
        "gzip-base64": (base64.b64encode(gzip.compress(token.encode())).decode(), None),
        "zlib-base64": (base64.b64encode(zlib.compress(token.encode())).decode(), None),
        "dsn-hash-in-password": (f"postgresql://app:{_PASSWORD}#x@db:5432/app", _PASSWORD),
        "dsn-slash-question": (f"mysql://root:{_PASSWORD}/?z@db/app", _PASSWORD),
    }


@pytest.mark.parametrize("name", sorted(_escaped_variants()))
def test_a_secret_escaped_compressed_or_behind_a_disguised_label_is_hidden_S5(name: str) -> None:
    """Issue 26's new round: what a reader decodes without a tool must not pass redaction."""
    text, secret = _escaped_variants()[name]
    line = f"config: {text} (end)"
    shown = redact(line)
    assert "[REDACTED]" in shown, shown
    assert secret is None or secret not in shown
    assert text not in shown
    assert shown.endswith("(end)")


@pytest.mark.parametrize(
    "text",
    [
        "https://example.com/search?q=hello%20world&page=2",
        "Привет, мир: обычный русский текст, а не пароль.",
        "مرحبا\u200cبالعالم",
        "家族👨\u200d👩\u200d👧 ＡＢＣ社の報告：売上は１００件。",
        '{"name": "caf\\u00e9", "path": "C:\\\\x41"}',
        "https://registry.npmjs.org:443/@types/node and http://host:8080/x?mail=a@b.com",
    ],
)
def test_ordinary_escapes_and_other_scripts_are_left_alone_S5(text: str) -> None:
    """The view reads escapes and look-alikes, but ordinary text in them stays as written."""
    assert redact(text) == text
