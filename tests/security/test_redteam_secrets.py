"""Red team, secrets (SPEC S5, S8; issue 12 item 3): labelled, provider-shaped, in URLs, in diffs.

Shapes only: none of these is a real credential.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tao.redact import redact
from tao.tools.write import write_tools

LABELLED = [
    ('password = "hunter2-horse"', "hunter2-horse"),
    ("PASSWORD='hunter2-horse'", "hunter2-horse"),
    ("Password: hunter2-horse", "hunter2-horse"),
    ("db:\n  password: correct horse battery\n", "horse battery"),
    ('{"password": "hunter2-horse", "user": "bob"}', "hunter2-horse"),
    ('{"DB_Password":"hunter2-horse"}', "hunter2-horse"),
    ("aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMIK7MDENG"),
    ("export DB_PASS=hunter2-horse", "hunter2-horse"),
    ("MYSQL_PWD=hunter2-horse", "hunter2-horse"),
    ("APP_JWT: hunter2-horse", "hunter2-horse"),
    ("clientSecret: 'hunter2-horse'", "hunter2-horse"),
    ("x-api-key: hunter2horse99", "hunter2horse99"),
    ("sentry_dsn=https://abc123def@o1.ingest.sentry.io/1", "abc123def"),
    ("<password>hunter2-horse</password>", "hunter2-horse"),
    ("--db-password=hunter2-horse", "hunter2-horse"),
    ("Authorization: Bearer abcdef0123456789xyz", "abcdef0123456789xyz"),
]

PROVIDERS = {
    "stripe test": "sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "stripe restricted": "rk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "slack webhook": "https://hooks.slack.com/services/T0000AAAA/B0000BBBB/" + "x1Y2z3" * 4,
    "slack bot": "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx",
    "npm": "npm_" + "a1B2c3D4" * 4 + "e5F6",
    "pypi": "pypi-AgEIcHlwaS5vcmc" + "CJGQ2NjYzNzNiLTU3" * 4,
    "sendgrid": "SG."
    + "a1B2c3D4e5F6g7H8i9J0k1"
    + "."
    + "L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6a7B8c9D0e1F2g",
    "github": "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8",
    "gitlab": "glpat-" + "a1B2c3D4e5F6g7H8i9J0",
    "aws id": "AKIA" + "Z7QRSTUVWXY2ABCD",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "anthropic": "sk-ant-api03-" + "x9Y" * 20,
    "openai project": "sk-proj-" + "Ab3" * 16,
    "google": "AIza" + "SyD" * 11 + "xy",
    "telegram": "123456789:" + "AAH" + "x1Y2z3W4v5" * 3 + "ab",
}


def test_labelled_secrets_in_any_case_and_quoting_S8() -> None:
    leaks = [(text, redact(text)) for text, secret in LABELLED if secret in redact(text)]
    assert leaks == []


def test_provider_shapes_the_old_list_missed_S8() -> None:
    leaks = [
        (kind, text)
        for kind, secret in PROVIDERS.items()
        for text in (secret, f"value: {secret} end", f'"{secret}"', f"x={secret}")
        if secret in redact(text)
    ]
    assert leaks == []


@pytest.mark.parametrize(
    "url",
    [
        "https://user:hunter2-horse@api.example.com/v1",
        "postgresql://app:hunter2-horse@db.internal:5432/app",
        "redis://:hunter2-horse@cache:6379/0",
        "https://user:hunter2@horse@host/x",
        "https://api.example.com/v1?api_key=hunter2-horse&x=1",
    ],
)
def test_credentials_in_urls_are_redacted_S8(url: str) -> None:
    from tao.redact import redact_url  # new in the redesign

    assert "hunter2" not in redact_url(url) and "horse" not in redact_url(url)
    assert "hunter2" not in redact(f"--base-url {url}")


def test_redact_url_keeps_the_url_usable() -> None:
    from tao.redact import redact_url

    assert redact_url("https://u:pw@host:8080/v1?q=1") == "https://u:[REDACTED]@host:8080/v1?q=1"
    assert redact_url("http://localhost:8000/v1") == "http://localhost:8000/v1"


def test_private_key_block_is_redacted_whole_even_when_cut_S8() -> None:
    body = "MIIEowIBAAKCAQEA" + "q1w2e3r4" * 8
    full = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\nafter"
    assert body not in redact(full) and redact(full).endswith("after")
    assert body not in redact(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n")


def test_write_preview_shows_no_secret_but_the_write_is_real_S8(tmp_path: Path) -> None:
    (tmp_path / "settings.py").write_text('DB_PASSWORD = "old-hunter2"\n')
    write, _ = write_tools(tmp_path)
    assert write.preview is not None
    content = 'DB_PASSWORD = "new-horse9"\nSTRIPE = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"\n'
    shown = write.preview({"path": "settings.py", "content": content})
    for secret in ("old-hunter2", "new-horse9", "sk_test_4eC39"):
        assert secret not in shown
    assert "DB_PASSWORD" in shown
    write.invoke({"path": "settings.py", "content": content})
    assert (tmp_path / "settings.py").read_text() == content  # redaction never changes the act
