"""Model profiles (raglab/profiles.py): parsing and validation, the measured token sizes, an
index recording its profile in every store, the refused mismatch, and flags overriding one
field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from raglab import Index, Principal, ask
from raglab.cli import main
from raglab.embed.embedders import embedder
from raglab.ingest.loaders import load_folder
from raglab.profiles import (
    CHARS_PER_TOKEN,
    READS_TOKENS,
    Profile,
    ProfileError,
    ProfileMismatch,
    available_profiles,
    embedder_tokens,
    from_record,
    profile,
    read_profiles,
    shipped_profiles,
)
from tests.conftest import CORPUS, STORES
from tests.generate.test_openai_http import server  # noqa: F401 (a fixture)

ACME = Principal("ann", "acme")
LEAVE = "How many vacation days do I get?"
FAST = """\
embedder = "hashing"
chunk_tokens = 100
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def small_corpus(tmp_path) -> Path:
    """Three documents of the sample corpus: enough to index in every store quickly."""
    folder = tmp_path / "corpus"
    for name in ("acme/policies/leave.md", "acme/policies/travel.md", "acme/holidays-2025.md"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CORPUS / name, folder / name)
    return folder


# --- the shipped profiles ------------------------------------------------------------------------


def test_the_shipped_profiles_are_the_three_the_readme_names():
    found = shipped_profiles()
    assert sorted(found) == ["llm", "offline-fast", "offline-neural"]
    assert (found["offline-fast"].embedder, found["offline-neural"].embedder) == (
        "hashing",
        "minilm",
    )
    assert found["llm"].answerer == "openai" and found["llm"].llm_url == "$RAGLAB_LLM_URL"
    assert found["offline-neural"].abstention_rule == "minilm"  # its abstention rule, not hashing's


@pytest.mark.parametrize("name", ["offline-fast", "offline-neural"])
def test_each_shipped_profile_names_the_version_of_its_embedder_this_raglab_has(name):
    p = profile(name)
    assert p.embedder_version == embedder(p.embedder).version


@pytest.mark.parametrize("name", sorted(CHARS_PER_TOKEN.keys() - {"lsa"}))
def test_characters_per_token_is_what_the_sample_corpus_measures(name):
    text = "".join(doc.text for doc in load_folder(CORPUS).documents)
    measured = len(text) / embedder_tokens(name)(text)
    assert measured == pytest.approx(CHARS_PER_TOKEN[name], rel=0.03)


def test_no_offline_neural_chunk_of_the_sample_corpus_is_longer_than_minilm_reads():
    p = profile("offline-neural")
    count, chunker = embedder_tokens("minilm"), p.chunker()
    longest = max(count(c.text) for d in load_folder(CORPUS).documents for c in chunker.split(d))
    assert p.chunk_tokens <= longest <= READS_TOKENS["minilm"]


def test_sizes_in_tokens_become_the_chunkers_characters():
    p = profile("offline-fast")
    assert (p.chunker().size, p.chunker().overlap) == (780, 96)  # 130 and 16 words at 6.0
    assert p.describe() == "offline-fast (hashing, structure chunks of 130 words = 780 characters)"


# --- your own profiles, and what is refused ---------------------------------------------------------


def test_a_profile_of_yours_is_read_from_a_file_and_gets_the_defaults(tmp_path):
    path = write(tmp_path / "mine.toml", f"[tiny]\n{FAST}k = 3\ncontextual = true\n")
    p = profile("tiny", profiles_file=path)
    assert (p.k, p.contextual, p.retriever, p.abstention_rule) == (3, True, "hybrid", "hashing")
    assert set(available_profiles(path)) == {"tiny", *shipped_profiles()}


def test_the_user_config_folder_is_read_when_it_exists(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert "home" not in available_profiles()
    (tmp_path / "raglab").mkdir()
    write(tmp_path / "raglab" / "profiles.toml", f"[home]\n{FAST}")
    assert profile("home").chunk_tokens == 100


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (f"{FAST}chunk_size = 800\n", r"unknown key 'chunk_size'; the keys are: about, "),
        (
            'embedder = "hashing"\nchunk_tokens = "200"\n',
            r"chunk_tokens must be an integer >= 1 \(got chunk_tokens='200'\)",
        ),
        (f"{FAST}k = true\n", r"k must be an integer >= 1 \(got k=True\)"),
        (f"{FAST}contextual = 1\n", r"contextual must be true or false \(got contextual=1\)"),
        (
            'embedder = "bert"\nchunk_tokens = 100\n',
            r"embedder: unknown 'bert'; choose from: hashing, lsa, minilm",
        ),
        ('embedder = "hashing"\n', r"embedder: missing|chunk_tokens: missing"),
        (
            'embedder = "minilm"\nchunk_tokens = 300\n',
            r"chunk_tokens: minilm reads at most 254 tokens",
        ),
        (
            f"{FAST}overlap_tokens = 100\n",
            r"overlap_tokens must be < chunk_tokens \(got overlap_tokens=100\)",
        ),
        (f'{FAST}answerer = "openai"\n', r"llm_url: the openai answerer needs a server URL"),
        (
            f'{FAST}abstention_rule = "bert"\n',
            r"abstention_rule: no abstention rule is fitted for 'bert'",
        ),
        (f'{FAST}fusion = "sum"\n', r"fusion: unknown 'sum'; choose from: rrf, minmax"),
        (
            f"{FAST}dense_weight = 2\n",
            r"dense_weight must be a finite number from 0 to 1 \(got dense_weight=2\)",
        ),
    ],
)
def test_a_bad_profile_is_one_line_naming_the_file_the_profile_and_the_key(
    tmp_path, table, message
):
    path = write(tmp_path / "mine.toml", f"[bad]\n{table}")
    with pytest.raises(ProfileError, match=rf"^{path}: profile 'bad': ({message})") as caught:
        read_profiles(path)
    assert "\n" not in str(caught.value)


def test_a_shipped_name_cannot_be_taken_again_and_bad_toml_is_named(tmp_path):
    taken = write(tmp_path / "taken.toml", f"[offline-fast]\n{FAST}")
    with pytest.raises(
        ProfileError, match=r"profile 'offline-fast' is already defined in raglab/profiles.toml"
    ):
        available_profiles(taken)
    broken = write(tmp_path / "broken.toml", "[x\n")
    with pytest.raises(ProfileError, match=rf"^{broken}: not valid TOML"):
        read_profiles(broken)
    with pytest.raises(
        ValueError, match=r"unknown profile 'nope'; choose from: llm, offline-fast, offline-neural"
    ):
        profile("nope")


def test_the_llm_profile_reads_its_server_from_the_environment(monkeypatch):
    monkeypatch.delenv("RAGLAB_LLM_URL", raising=False)
    with pytest.raises(ValueError, match=r"reads llm_url from RAGLAB_LLM_URL, which is not set"):
        profile("llm").model()
    monkeypatch.setenv("RAGLAB_LLM_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RAGLAB_LLM_MODEL", "tiny")
    model = profile("llm").model()
    assert (model.base_url, model.model) == ("http://127.0.0.1:9/v1", "tiny")


# --- an index records its profile ------------------------------------------------------------------


@pytest.mark.parametrize("backend", STORES)
def test_the_recorded_profile_survives_reopening_in_every_store(backend, small_corpus, tmp_path):
    p = profile("offline-fast")
    path = (
        None
        if backend == "memory"
        else tmp_path / ("index.sqlite" if backend == "sqlite" else "qdrant")
    )
    options = {} if backend == "memory" else {"path": path, "backend": backend}
    built = Index.from_folder(small_corpus, profile=p, **options)
    assert built.profile == p
    assert built.store.meta["profile"] == {**p.as_dict(), "overridden": []}
    assert from_record(built.store.meta["profile"], "index") == p  # through JSON and back
    if path is not None:
        built.store.close()
        again = Index.open(path, backend=backend)
        assert again.profile == p
        assert again.store.meta["chunker"] == p.chunker().params()
        again.store.close()


def test_an_index_built_without_a_profile_records_none_and_asks_as_before(small_corpus):
    index = Index.from_folder(small_corpus)
    assert index.profile is None and index.store.meta["profile"] is None
    assert (index.k, index.method) == (5, "hybrid")


def test_an_override_is_recorded_with_the_profile(small_corpus, tmp_path):
    from raglab.ingest.chunking import Chunker

    path = tmp_path / "i.sqlite"
    index = Index.from_folder(
        small_corpus, path=path, profile="offline-fast", chunker=Chunker(size=500)
    )
    assert index.store.meta["profile"]["overridden"] == ["chunk_tokens", "overlap_tokens"]
    assert index.store.meta["chunker"]["size"] == 500  # the effective settings


# --- the refused mismatch, and what is allowed -----------------------------------------------------


def test_asking_with_another_embedders_profile_is_refused_with_what_to_run(small_corpus, tmp_path):
    path = tmp_path / "fast.sqlite"
    Index.from_folder(small_corpus, path=path, profile="offline-fast").store.close()
    with pytest.raises(ProfileMismatch) as caught:
        Index.open(path, profile="offline-neural")
    message = str(caught.value)
    assert "built with offline-fast (hashing)" in message
    assert "embedder hashing instead of minilm" in message
    assert (
        f"`raglab index DIR --index {tmp_path / 'fast-offline-neural.sqlite'} --profile offline-neural`"
        in message
    )
    index = Index.open(path)
    with pytest.raises(ProfileMismatch, match=r"embedder hashing instead of minilm"):
        ask(LEAVE, index, ACME, profile="offline-neural")


def test_a_profile_with_the_same_embedder_and_chunking_may_ask_with_its_own_query_settings(
    small_corpus,
):
    index = Index.from_folder(small_corpus, profile="offline-fast")
    one = Profile(**{**_fields(profile("offline-fast")), "name": "one-hit", "k": 1})
    answer = ask(LEAVE, index, ACME, profile=one)
    assert len(answer.retrieved) == 1
    assert len(ask(LEAVE, index, ACME).retrieved) > 1  # the index's own profile: k 5
    assert len(ask(LEAVE, index, ACME, profile=one, k=2).retrieved) == 2  # an argument overrides


def _fields(p: Profile) -> dict:
    from dataclasses import asdict

    return asdict(p)


def test_a_chunking_difference_alone_is_refused_and_reindexing_the_same_file_is_advised(
    small_corpus, tmp_path
):
    path = tmp_path / "i.sqlite"
    Index.from_folder(small_corpus, path=path, profile="offline-fast").store.close()
    other = Profile(**{**_fields(profile("offline-fast")), "name": "bigger", "chunk_tokens": 200})
    with pytest.raises(
        ProfileMismatch, match=r"chunker size 780 instead of 1200 characters"
    ) as caught:
        Index.open(path, profile=other)
    assert f"--index {path} --profile bigger" in str(caught.value)


# --- the command line ----------------------------------------------------------------------------


def test_cli_index_with_a_profile_then_ask_refuses_another(small_corpus, tmp_path, capsys):
    path = tmp_path / "fast.sqlite"
    assert (
        main(
            [
                "index",
                str(small_corpus),
                "--index",
                str(path),
                "--profile",
                "offline-fast",
                "--json",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert (summary["profile"], summary["chunker"]["size"]) == ("offline-fast", 780)
    assert main(["ask", LEAVE, "--index", str(path), "--tenant", "acme", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["citations"]
    assert (
        main(
            ["ask", LEAVE, "--index", str(path), "--tenant", "acme", "--profile", "offline-neural"]
        )
        == 1
    )
    error = capsys.readouterr().err
    assert error.startswith("raglab: error: index ") and error.count("\n") == 1
    assert "embedder hashing instead of minilm" in error and "--profile offline-neural`" in error


def test_cli_flags_override_one_field_and_the_index_records_the_effective_settings(
    small_corpus, tmp_path, capsys
):
    path = tmp_path / "i.sqlite"
    argv = ["index", str(small_corpus), "--index", str(path), "--profile", "offline-fast"]
    assert main([*argv, "--chunk-size", "500", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunker"]["size"] == 500
    index = Index.open(path)
    assert index.store.meta["profile"]["overridden"] == ["chunk_tokens"]
    index.store.close()
    assert main(["ask", LEAVE, "--index", str(path), "--tenant", "acme", "--k", "2", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["retrieved"]) <= 2
    docs = ["--docs", str(small_corpus), "--tenant", "acme", "--json"]
    assert main(["ask", LEAVE, *docs, "--profile", "offline-fast", "--retriever", "bm25"]) == 0
    capsys.readouterr()


def test_cli_eval_with_a_profile_reports_it(small_corpus, tmp_path, capsys):
    questions = write(
        tmp_path / "q.jsonl",
        json.dumps(
            {
                "id": "q1",
                "question": LEAVE,
                "tenant": "acme",
                "relevant_docs": ["acme/policies/leave.md"],
                "answerable": True,
            }
        )
        + "\n",
    )
    argv = [
        "eval",
        "--docs",
        str(small_corpus),
        "--questions",
        str(questions),
        "--profile",
        "offline-fast",
        "--json",
    ]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["profile"], report["k"], report["retriever"], report["recall@k"]) == (
        "offline-fast",
        5,
        "hybrid",
        1.0,
    )


def test_cli_profiles_file_needs_a_profile_and_bad_files_are_one_line(tmp_path, capsys):
    bad = write(tmp_path / "mine.toml", f"[bad]\n{FAST}chunk_size = 3\n")
    base = ["ask", LEAVE, "--docs", str(CORPUS)]
    assert main([*base, "--profiles", str(bad)]) == 1
    assert "--profiles FILE needs --profile NAME" in capsys.readouterr().err
    assert main([*base, "--profiles", str(bad), "--profile", "bad"]) == 1
    assert (
        capsys.readouterr().err
        == f"raglab: error: {bad}: profile 'bad': unknown key 'chunk_size'; "
        + (
            "the keys are: about, abstention_rule, answerer, chunk_tokens, chunker, context_tokenizer, "
            "context_tokens, contextual, dense_weight, embedder, embedder_version, fusion, k, "
            "llm_model, llm_url, overlap_tokens, reranker, retriever\n"
        )
    )


def test_cli_an_update_without_profile_keeps_the_recorded_one(small_corpus, tmp_path, capsys):
    mine = write(tmp_path / "mine.toml", '[lsa-small]\nembedder = "lsa"\nchunk_tokens = 60\n')
    path = tmp_path / "i.sqlite"
    first = ["index", str(small_corpus), "--index", str(path), "--json"]
    assert main([*first, "--profiles", str(mine), "--profile", "lsa-small"]) == 0
    capsys.readouterr()
    shutil.copy(CORPUS / "acme/policies/remote-work.md", small_corpus / "acme/policies/")
    assert main(first) == 0  # no --embedder lsa, no chunk size: the index's own profile
    summary = json.loads(capsys.readouterr().out)
    assert (summary["profile"], summary["embedder"], summary["added"]) == (
        "lsa-small",
        "lsa",
        ["acme/policies/remote-work.md"],
    )
    assert summary["chunker"]["size"] == 360 and "chunker" not in summary["rebuilt"]  # not re-cut


def test_the_profile_decides_the_fusion_and_the_reranker(small_corpus):
    index = Index.from_folder(small_corpus, profile="offline-fast")
    assert str(index.retriever("hybrid").fusion) == "rrf w=0.0"
    assert index.retriever("hybrid").reranker is None
    changed = {**_fields(profile("offline-fast")), "fusion": "minmax", "reranker": True}
    reranked = index.with_profile(Profile(**{**changed, "name": "reranked"}))
    assert str(reranked.retriever("hybrid").fusion) == "minmax w=0.0"
    assert reranked.retriever("hybrid").reranker is not None


def test_a_profile_with_a_model_asks_the_server_its_environment_names(
    small_corpus,
    server,  # noqa: F811
    monkeypatch,
):
    from raglab.embed.tokens import approx_tokens

    monkeypatch.setenv("RAGLAB_LLM_URL", server.url)
    monkeypatch.setenv("RAGLAB_LLM_MODEL", "tiny")
    model = {
        **_fields(profile("offline-fast")),
        "name": "fast-llm",
        "answerer": "openai",
        "abstention_rule": None,
        "llm_url": "$RAGLAB_LLM_URL",
        "llm_model": "$RAGLAB_LLM_MODEL",
        "context_tokens": 250,
    }
    server.answer("Staff get 25 days [1].")
    index = Index.from_folder(small_corpus, profile="offline-fast")
    answer = ask(LEAVE, index, ACME, profile=Profile(**model))
    assert answer.text == "Staff get 25 days [1]." and len(answer.citations) == 1
    assert json.loads(server.requests[0]["body"])["model"] == "tiny"
    # the context budget, in the profile's tokens (4 characters each): fewer than k sources
    assert 1 <= len(answer.retrieved) < 5
    assert sum(approx_tokens(hit.chunk.text) for hit in answer.retrieved) <= 250


def test_a_profile_made_for_another_version_of_its_embedder_is_refused(small_corpus, tmp_path):
    older = {**_fields(profile("offline-fast")), "name": "older", "embedder_version": "hash-v1"}
    with pytest.raises(
        ProfileMismatch, match=r"profile 'older' was made for hashing version hash-v1"
    ):
        Index.from_folder(small_corpus, profile=Profile(**older))
    path = tmp_path / "i.sqlite"
    Index.from_folder(small_corpus, path=path, profile="offline-fast").store.close()
    with pytest.raises(ProfileMismatch, match=r"embedder version hash-v2:.* instead of hash-v1"):
        Index.open(path, profile=Profile(**older))


def test_a_profile_made_in_python_is_checked_as_raglab_checks_every_argument():
    with pytest.raises(
        ValueError, match=r"chunk_tokens must be an integer >= 1 \(got chunk_tokens=0\)"
    ):
        Profile("p", "hashing", 0)
    with pytest.raises(TypeError, match=r"reranker must be true or false \(got reranker='yes'\)"):
        Profile("p", "hashing", 100, reranker="yes")
    assert Profile("p", "hashing", 100, dense_weight=1).dense_weight == 1.0  # a TOML 1 is 1.0


def test_cli_ask_with_a_model_profile_and_no_server_set_says_so_before_indexing(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("RAGLAB_LLM_URL", raising=False)
    missing = tmp_path / "no-such-folder"  # never read: the model is made first
    assert main(["ask", LEAVE, "--docs", str(missing), "--profile", "llm"]) == 1
    assert capsys.readouterr().err == (
        "raglab: error: profile 'llm' reads llm_url from RAGLAB_LLM_URL, which is not set: "
        "export RAGLAB_LLM_URL=... (an OpenAI-compatible server), or choose an offline profile\n"
    )
