"""Red team, a huge tool output redacted where it is cut (SPEC L6, S8, S11; issue 26).

A tool's output is cut to its ``max_chars`` after redaction; only the kept end and a margin
past it are redacted (:mod:`tao.redact.kept`), so a 16 MB output costs what a 1 MB one does.
The attacks: a secret placed across every border the window has (the shown part's end, the
window's end, the tail window's start), in every form a layer finds only with context (a
label before its value, a PEM block, base64 of a text holding a token, a key wrapped over
lines), and the wiring (an agent's observation, head and tail).

Shapes only: none of these is a real credential.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tao import Agent, tool
from tao.redact import redact
from tao.redact.kept import EDGE
from tao.run.act import redacted_cut
from tao.tools.base import cut

GITHUB = "ghp_" + "Zx8Cv6Bn4MLk3Jh2Gf1DsA0PoIuYtRe9WqQ"
PROSE = "The quick brown fox jumps over the lazy dog. "
KEEP = 8_000


def _observation(text: str, keep: str) -> str:
    """What the model is shown of a tool's output ``text``: the run's own path."""

    def dump() -> str:
        """Print a lot."""
        return text

    return redacted_cut(text, tool(max_chars=KEEP, keep=keep)(dump))  # type: ignore[call-overload]


def _prose(size: int) -> str:
    return (PROSE * (size // len(PROSE) + 1))[:size]


def _pieces(secret: str) -> list[str]:
    """Every 8 characters of ``secret``: none may be shown."""
    return [secret[i : i + 8] for i in range(0, len(secret) - 7)]


def _shows_none(shown: str, secret: str) -> bool:
    return not any(piece in shown for piece in _pieces(secret))


#: A secret in the forms a layer finds only with what stands around it.
FORMS: dict[str, Callable[[], tuple[str, str]]] = {
    "a bare token": lambda: (GITHUB, GITHUB),
    "a labelled value": lambda: ('password = "Hq7vP2xL9kRm4Zt8Wc"', "Hq7vP2xL9kRm4Zt8Wc"),
    "an env line": lambda: ("\nCONF_VALUE=9f8e7d6c5b4a39281706f5e4d3c2b1a0\n", "9f8e7d6c5b4a3928"),
    "base64 of a token": lambda: (base64.b64encode(f"key {GITHUB} end".encode()).decode(), ""),
    "a token wrapped over lines": lambda: (f"\n{GITHUB[:20]}\n{GITHUB[20:]}\n", GITHUB),
    "a PEM block": lambda: (
        "\n-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(["MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"] * 60)
        + "\n-----END RSA PRIVATE KEY-----\n",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    ),
}


def _hidden(form: str) -> tuple[str, str]:
    planted, secret = FORMS[form]()
    return planted, secret or planted


def _borders(keep: str, size: int) -> list[int]:
    """Where the window's borders fall in a text of ``size`` characters (see kept.py)."""
    if keep == "head":
        return [KEEP, KEEP + EDGE, KEEP + 2 * EDGE]
    return [size - KEEP, size - KEEP - EDGE, size - KEEP - 2 * EDGE]


@pytest.mark.parametrize("keep", ["head", "tail"])
@pytest.mark.parametrize("form", FORMS)
def test_no_secret_across_a_window_border_is_shown_in_part_S8(form: str, keep: str) -> None:
    """The secret starts at each offset around each border; no 8 characters of it show."""
    planted, secret = _hidden(form)
    size = 300_000
    for border in _borders(keep, size):
        for shift in range(-len(planted) - 2, 3, max(1, len(planted) // 9)):
            at = border + shift
            text = _prose(at) + f" {planted} " + _prose(size - at - len(planted) - 2)
            shown = _observation(text, keep)
            assert "[output cut: showing" in shown
            assert _shows_none(shown, secret), (form, keep, border, shift)


@pytest.mark.parametrize("keep", ["head", "tail"])
def test_what_is_shown_is_what_a_whole_redaction_shows_S8(keep: str) -> None:
    """On text whose redaction does not shrink it much, the cut window shows the same text
    as redacting all of it and cutting after: nothing more, nothing less."""
    parts = [_prose(2_000), f"token: {GITHUB}\n", 'api_key = "Hq7vP2xL9kRm4Zt8Wc"\n']
    text = "".join(parts * 200)
    whole = cut(redact(text), KEEP, keep, len(text))  # type: ignore[arg-type]
    assert _observation(text, keep) == whole
    assert GITHUB not in whole


def test_an_encoded_run_across_the_tail_window_start_is_decoded_from_its_first_character_S8() -> (
    None
):
    """A base64 blob longer than the margin begins before the tail window: decoded from an
    offset that is not its own, every quad would be garbage and its tokens would show."""
    secret_text = "".join(f"line {i:05d} {GITHUB}\n" for i in range(1_500))
    blob = base64.b64encode(secret_text.encode()).decode()
    for before in (0, 1, 2, 3, 5_000, EDGE - 7):
        text = _prose(200_000 + before) + "\n" + blob
        shown = _observation(text, "tail")
        body = shown.split("characters]\n", 1)[1]
        encoded_token = base64.b64encode(f" {GITHUB}\n".encode()).decode()[4:20]
        assert encoded_token not in body, before
        assert blob[-200:] not in body, before  # the blob's end is hidden, not shown


@pytest.mark.parametrize("keep", ["head", "tail"])
def test_a_huge_output_costs_what_a_small_one_does_S11(keep: str) -> None:
    """Sixteen times the output, about the same CPU: only the kept end is read."""

    def crafted(size: int) -> str:  # dense secrets, the shape that costs most per byte
        lines = (f"CONF_VALUE=9f8e7d6c5b4a{i:06d}f5e4d3c2b1a0\n" for i in range(size // 40 + 1))
        return "".join(lines)[:size]

    small, large = crafted(1_000_000), crafted(16_000_000)
    _observation(small, keep)

    def cpu(text: str) -> float:
        started = time.process_time()
        _observation(text, keep)
        return time.process_time() - started

    assert min(cpu(large) for _ in range(2)) < 3 * max(min(cpu(small) for _ in range(2)), 0.01)


@pytest.mark.parametrize("keep", ["head", "tail"])
def test_an_agent_shows_a_huge_output_cut_and_redacted_at_the_cut_L6_S8(
    keep: str, replay: Callable[[list[str]], Path]
) -> None:
    """Through the run itself: a 4 MB output with tokens at the cut; the observation says
    how much the tool returned and shows no token."""
    size = 4_000_000

    @tool(max_chars=KEEP, keep=keep)  # type: ignore[call-overload]
    def dump() -> str:
        """Print a lot."""
        at = KEEP - 20 if keep == "head" else size - KEEP - 20
        return _prose(at) + GITHUB + _prose(size - at - len(GITHUB))

    script = replay(["Action: dump[]", "Action: finish[ok]"])
    result = Agent(f"replay:{script}", [dump], record=False).run("task")
    observation = result.steps[0].observation or ""
    assert f"of {size:,} characters]" in observation
    assert _shows_none(observation, GITHUB)
    assert "[REDACTED]" in observation


def test_an_output_whose_redaction_fits_is_shown_whole_without_a_cut_note_L6() -> None:
    """An output a little over the size whose hidden token makes it fit: nothing was cut,
    so the model is not told it saw only part."""
    text = "x" * (KEEP - 20) + f" token: {GITHUB} "
    assert len(text) > KEEP
    shown = _observation(text, "head")
    assert "[output cut" not in shown and shown.endswith("token: [REDACTED] ")
