"""Credentials kept out of the corpus (raglab.ingest.credentials) and the loader's use of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from raglab.ingest.credentials import REDACTED, entropy, find_secrets, redact
from raglab.ingest.loaders import load_file, load_folder

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

# Made-up credentials in the providers' shapes (AWS's own documentation example key).
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
RANDOM = "q8Zr2Lk9Vx4Tn7Wp1Ys6Hd3Fg5Jb0Mc2Nx8Qv"  # 38 characters, base64-like
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"

FOUND = [
    (f"key: {AWS}", "AWS access key id"),
    (f"token {GITHUB}", "GitHub token"),
    (PEM, "private key block"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----", "private key block"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "private key block"),
    ("Authorization: Bearer abcdefghijklmnop1234", "bearer token"),
    ("password = hunter2-Secret", "password or key assignment"),
    ("PASSWORD: 'Tr0ub4dor&3'", "password or key assignment"),
    ('"api_key": "k-12345678"', "password or key assignment"),
    ("client_secret=9f8e7d6c5b4a", "password or key assignment"),
    ("DB_PASSWORD=hunter2-Secret", "password or key assignment"),  # env style: _ before
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "password or key assignment"),
    (f"see {RANDOM} here", "high-entropy string"),
    ("xoxb-123456789012-abcdefghij", "Slack token"),
    ("AIza" + "B" * 35, "Google API key"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig_part", "JSON web token"),
    # look-alikes: full-width letters, a zero-width space inside the key
    ("key: ＡＫＩＡ" + AWS[4:], "AWS access key id"),
    ("key: AKIA\u200b" + AWS[4:], "AWS access key id"),
]


@pytest.mark.parametrize(("text", "kind"), FOUND)
def test_credentials_are_found(text, kind):
    assert kind in [secret.kind for secret in find_secrets(text)]


NOT_SECRETS = [
    "Choose a password of at least 14 characters.",
    "The password is printed on the card at the reception desk.",
    "password: <your password>",
    "password = ********",
    "api_key: ${API_KEY}",
    "token: 5",
    "Commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it.",  # a hex digest: 4 bits a char
    "Request id 123e4567-e89b-12d3-a456-426614174000.",  # a UUID
    "See Settings/Account/Developer/Tokens/PersonalAccess for details.",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_is_not_a_secret(text):
    assert find_secrets(text) == []


def test_the_sample_corpus_holds_no_secret():
    """The planted injection states a password in prose: not an assignment, not found."""
    for path in sorted(CORPUS.rglob("*.*")):
        assert find_secrets(path.read_text(encoding="utf-8")) == [], path


def test_entropy_edges():
    assert entropy("aaaa") == 0.0
    assert entropy("ab") == 1.0
    assert entropy(RANDOM) > 4.2 > entropy("3f786850e387550fdab836ed7e6dc881de23001b")


def test_redact_cuts_out_each_secret_and_keeps_the_rest():
    text = f"Deploy with {AWS}.\npassword = hunter2-Secret\nThen restart."
    clean = redact(text)
    assert AWS not in clean and "hunter2" not in clean
    assert clean == f"Deploy with {REDACTED}.\npassword = {REDACTED}\nThen restart."
    assert find_secrets(clean) == []


def test_lines_are_numbered_from_one():
    assert [s.line for s in find_secrets(f"a\nb\n{AWS}\n{GITHUB}")] == [3, 4]


# ---------------------------------------------------------------------------- at load


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_file_holding_a_key_is_refused_by_name_and_the_rest_still_load(tmp_path):
    write(tmp_path, "notes/deploy.md", f"# Deploy\n\nUse key {AWS} for the bucket.\n")
    write(tmp_path, "notes/leave.md", "# Leave\n\nTen days.\n")
    loaded = load_folder(tmp_path)
    assert [doc.id for doc in loaded.documents] == ["notes/leave.md"]
    [error] = loaded.errors
    assert error.path == "notes/deploy.md"
    assert error.reason.startswith(
        "refused: line 3 holds what looks like a credential (AWS access key id)"
    )
    assert AWS not in str(error)  # the message never repeats the secret


def test_redact_mode_loads_the_file_without_the_secret_and_says_so(tmp_path):
    write(
        tmp_path, "deploy.md", f"---\ntitle: Deploy\n---\nKey {AWS}.\npassword = hunter2-Secret\n"
    )
    loaded = load_folder(tmp_path, secrets="redact")
    [doc] = loaded.documents
    assert doc.text == f"Key {REDACTED}.\npassword = {REDACTED}\n"
    [notice] = loaded.warnings
    assert (
        notice.path == "deploy.md" and "line 4" in notice.reason and "(and 1 more)" in notice.reason
    )
    assert not loaded.errors


def test_redact_mode_still_refuses_what_it_cannot_cut_out(tmp_path):
    write(tmp_path, "a.md", f"---\ntitle: key {AWS}\n---\nBody.\n")  # in the front matter
    write(tmp_path, "b.md", "Key: AKIA\u200b" + AWS[4:] + "\n")  # hidden by a zero-width space
    loaded = load_folder(tmp_path, secrets="redact")
    assert [error.path for error in loaded.errors] == ["a.md", "b.md"]
    assert not loaded.documents


def test_an_unknown_secrets_policy_is_refused(tmp_path):
    write(tmp_path, "a.md", "x")
    with pytest.raises(
        ValueError, match=r"unknown secrets policy 'ignore'; choose from: refuse, redact"
    ):
        load_file(tmp_path / "a.md", root=tmp_path, secrets="ignore")
