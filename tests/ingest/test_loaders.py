"""Tests for raglab.ingest.loaders: files -> Document, with validation and front matter."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from raglab.ingest.loaders import (
    CorpusError,
    DocumentError,
    LoadResult,
    load_file,
    load_folder,
    parse_front_matter,
)

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def write(root: Path, relative: str, content: str | bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    return path


def errors_by_id(result: LoadResult) -> dict[str, str]:
    return {error.path: error.reason for error in result.errors}


# ---------------------------------------------------------------------------- folder walking


def test_walks_recursively_sorted_by_posix_id_skipping_hidden_and_other_suffixes(tmp_path):
    write(tmp_path, "b.md", "B")
    write(tmp_path, "a/z.txt", "Z")
    write(tmp_path, "a/b/c.md", "C")
    write(tmp_path, ".git/HEAD.md", "hidden folder")
    write(tmp_path, "a/.draft.md", "hidden file")
    write(tmp_path, "notes.pdf", "not a text suffix")
    write(tmp_path, "UPPER.MD", "suffix case does not matter")
    result = load_folder(tmp_path)
    assert [d.id for d in result.documents] == ["UPPER.MD", "a/b/c.md", "a/z.txt", "b.md"]
    assert result.errors == ()


def test_one_bad_file_does_not_lose_the_rest(tmp_path):
    write(tmp_path, "good1.md", "fine")
    write(tmp_path, "bad.md", b"\xff\xfe not utf-8")
    write(tmp_path, "good2.txt", "also fine")
    result = load_folder(tmp_path)
    assert [d.id for d in result.documents] == ["good1.md", "good2.txt"]
    assert list(errors_by_id(result)) == ["bad.md"]


def test_all_files_bad_gives_errors_not_an_exception(tmp_path):
    write(tmp_path, "bad.md", b"\x00")
    result = load_folder(tmp_path)
    assert result.documents == ()
    assert len(result.errors) == 1


def test_missing_folder_is_a_corpus_error(tmp_path):
    with pytest.raises(CorpusError, match=r"corpus folder '.*nope' does not exist"):
        load_folder(tmp_path / "nope")


def test_a_file_is_not_a_folder(tmp_path):
    path = write(tmp_path, "a.md", "x")
    with pytest.raises(CorpusError, match=r"corpus folder '.*a\.md' is not a folder"):
        load_folder(path)


@pytest.mark.parametrize("files", [{}, {"a.pdf": "x", ".hidden.md": "x"}])
def test_folder_without_documents_is_a_corpus_error(tmp_path, files):
    for name, content in files.items():
        write(tmp_path, name, content)
    with pytest.raises(CorpusError, match=r"contains no \.md or \.txt file"):
        load_folder(tmp_path)


def test_corpus_error_is_a_value_error():
    assert issubclass(CorpusError, ValueError)
    assert issubclass(DocumentError, ValueError)


# ---------------------------------------------------------------------------- one file


def test_defaults_without_front_matter(tmp_path):
    write(tmp_path, "notes/plain.txt", "Just text.\n# not a title in .txt")
    [doc] = load_folder(tmp_path).documents
    assert doc.id == "notes/plain.txt"
    assert (doc.title, doc.tenant, doc.groups, doc.version) == ("plain", "default", (), "1")
    assert doc.text == "Just text.\n# not a title in .txt"


def test_front_matter_exactly_as_design_shows(tmp_path):
    text = (
        "---\n"
        "title: Leave policy\n"
        'tenant: acme            # default tenant if absent: "default"\n'
        "groups: [hr, managers]  # absent or [] = every user of the tenant\n"
        "version: 2\n"
        "---\n"
        "# Heading\n"
        "Body.\n"
    )
    doc = load_file(write(tmp_path, "leave.md", text), root=tmp_path)
    assert doc.title == "Leave policy"
    assert doc.tenant == "acme"
    assert doc.groups == ("hr", "managers")
    assert doc.version == "2"
    assert doc.text == "# Heading\nBody.\n"  # the body: chunk offsets index into this


def test_title_falls_back_to_first_heading_outside_code_fences(tmp_path):
    text = "Intro\n```bash\n# a shell comment\n```\n## Sub\n# Real title #\nmore"
    doc = load_file(write(tmp_path, "guide.md", text), root=tmp_path)
    assert doc.title == "Real title"


def test_title_falls_back_to_stem_when_no_heading(tmp_path):
    doc = load_file(write(tmp_path, "dir/my-notes.md", "no heading here"), root=tmp_path)
    assert doc.title == "my-notes"
    assert doc.id == "dir/my-notes.md"


def test_groups_are_sorted_and_deduplicated_and_quotes_removed(tmp_path):
    text = '---\ngroups: [\'b\', "a, c", b, a]\ntitle: "Quoted # not a comment"\n---\nx'
    doc = load_file(write(tmp_path, "g.md", text), root=tmp_path)
    assert doc.groups == ("a", "a, c", "b")
    assert doc.title == "Quoted # not a comment"


def test_empty_groups_list_means_everyone_in_tenant(tmp_path):
    doc = load_file(write(tmp_path, "g.md", "---\ngroups: []\n---\nx"), root=tmp_path)
    assert doc.groups == ()


def test_apostrophe_in_bare_value_is_not_a_quote(tmp_path):
    doc = load_file(
        write(tmp_path, "t.md", "---\ntitle: Don't panic  # note\n---\nx"), root=tmp_path
    )
    assert doc.title == "Don't panic"


def test_bom_is_stripped_and_line_endings_normalised(tmp_path):
    data = b"\xef\xbb\xbf---\r\ntenant: acme\r\n---\r\nline one\r\nline two\r"
    doc = load_file(write(tmp_path, "w.md", data), root=tmp_path)
    assert doc.tenant == "acme"
    assert doc.text == "line one\nline two\n"


def test_document_hash_is_of_the_body(tmp_path):
    a = load_file(write(tmp_path, "a.md", "---\nversion: 1\n---\nsame"), root=tmp_path)
    b = load_file(write(tmp_path, "b.md", "same"), root=tmp_path)
    assert a.hash == b.hash


def test_symlink_inside_the_folder_is_loaded_under_the_link_path(tmp_path):
    write(tmp_path, "real.md", "content")
    try:
        os.symlink(tmp_path / "real.md", tmp_path / "alias.md")
    except (OSError, NotImplementedError):
        pytest.skip("symbolic links not available")
    ids = [d.id for d in load_folder(tmp_path).documents]
    assert ids == ["alias.md", "real.md"]


def test_symlink_pointing_out_of_the_folder_is_refused(tmp_path):
    corpus = tmp_path / "corpus"
    write(corpus, "ok.md", "fine")
    secret = write(tmp_path, "secret.md", "password")
    try:
        os.symlink(secret, corpus / "leak.md")
    except (OSError, NotImplementedError):
        pytest.skip("symbolic links not available")
    result = load_folder(corpus)
    assert [d.id for d in result.documents] == ["ok.md"]
    assert errors_by_id(result) == {"leak.md": "symbolic link points outside the corpus folder"}
    assert "password" not in repr(result)


def test_load_file_outside_root_is_refused(tmp_path):
    outside = write(tmp_path, "outside.md", "x")
    (tmp_path / "corpus").mkdir()
    with pytest.raises(DocumentError, match="is not inside the corpus folder"):
        load_file(outside, root=tmp_path / "corpus")


def test_missing_file_and_folder_named_md(tmp_path):
    with pytest.raises(DocumentError, match="^missing.md: file does not exist$"):
        load_file(tmp_path / "missing.md", root=tmp_path)
    (tmp_path / "folder.md").mkdir()
    with pytest.raises(DocumentError, match="^folder.md: not a regular file$"):
        load_file(tmp_path / "folder.md", root=tmp_path)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"abc\x00def", r"binary file \(NUL byte at offset 3\)"),
        (b"caf\xe9", r"not valid UTF-8 \(byte 0xe9 at offset 3\)"),
        (b"x" * 11, r"file too large \(11 bytes > max_bytes=10\)"),
    ],
)
def test_bad_bytes(tmp_path, content, reason):
    path = write(tmp_path, "f.md", content)
    with pytest.raises(DocumentError, match=f"^f.md: {reason}$"):
        load_file(path, root=tmp_path, max_bytes=10)


def test_size_limit_is_inclusive(tmp_path):
    doc = load_file(write(tmp_path, "f.md", "x" * 10), root=tmp_path, max_bytes=10)
    assert doc.text == "x" * 10


def test_max_bytes_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match=r"max_bytes must be an integer >= 1 \(got max_bytes=0\)"):
        load_file(write(tmp_path, "f.md", "x"), root=tmp_path, max_bytes=0)


@pytest.mark.parametrize(
    ("front", "message"),
    [
        ("---\ntitle: x\nbody", r"front matter opened on line 1 is never closed"),
        (
            "---\ntitle: x\njust words\n---\n",
            r"front matter line 3: expected 'key: value' \(got 'just words'\)",
        ),
        (
            "---\ngroups: hr\n---\n",
            r"front matter line 2: groups must be a list like \[hr, managers\] \(got 'hr'\)",
        ),
        ("---\n\ntenant:\n---\n", r"front matter line 3: tenant must not be empty"),
        ("---\ntenant: ''\n---\n", r"front matter line 2: tenant must not be empty"),
        (
            "---\ngrups: [hr]\n---\n",
            (
                r"front matter line 2: unknown key 'grups' "
                r"\(expected one of: groups, supersedes, tenant, title, version\)"
            ),
        ),
        ("---\ntenant: a\ntenant: b\n---\n", r"front matter line 3: key 'tenant' is given twice"),
        ("---\ngroups:\n  - hr\n---\n", r"front matter line 2: groups must be a list"),
        ("---\n- hr\n---\n", r"front matter line 2: block lists are not supported"),
        (
            "---\ntenant: [a]\n---\n",
            r"front matter line 2: tenant must be a single value, not a list",
        ),
        (
            "---\ngroups: [hr, , it]\n---\n",
            r"front matter line 2: groups must not contain an empty name",
        ),
        ("---\ntitle: 'open\n---\n", r"front matter line 2: unclosed quote"),
        ("---\nversion:\n---\n", r"front matter line 2: version must not be empty"),
    ],
)
def test_malformed_front_matter_names_the_line(tmp_path, front, message):
    path = write(tmp_path, "doc.md", front)
    with pytest.raises(DocumentError, match=f"^doc.md: {message}"):
        load_file(path, root=tmp_path)


def test_document_error_str_and_fields_and_pickle():
    error = DocumentError("a/b.md", "binary file")
    assert str(error) == "a/b.md: binary file"
    assert (error.path, error.reason) == ("a/b.md", "binary file")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.reason, str(copy)) == ("a/b.md", "binary file", "a/b.md: binary file")


def test_load_result_is_frozen(tmp_path):
    write(tmp_path, "a.md", "x")
    result = load_folder(tmp_path)
    with pytest.raises(AttributeError):
        result.documents = ()


# ---------------------------------------------------------------------------- properties

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_0123456789", min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    groups=st.lists(names, max_size=5),
    tenant=names,
    version=st.integers(min_value=0, max_value=999),
    body=st.text(max_size=40),
)
def test_front_matter_round_trip(groups, tenant, version, body):
    text = f"---\ntenant: {tenant}\ngroups: [{', '.join(groups)}]\nversion: {version}\n---\n{body}"
    fields, rest = parse_front_matter(text)
    assert fields == {
        "tenant": tenant,
        "groups": tuple(sorted(set(groups))),
        "version": str(version),
    }
    assert rest == body


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=60))
def test_text_without_a_fence_is_all_body(text):
    text = text.replace("-", "")  # no dash, so no fence and no look-alike of one
    assert parse_front_matter(text) == ({}, text)


@settings(max_examples=200, deadline=None)
@given(
    before=st.lists(st.sampled_from(["", " ", "\t", "\u200b", "\ufeff", "\u2060"]), max_size=3),
    fence=st.sampled_from(["---", " ---", "\u200b---", "－－－", "----", "-\u00ad--"]),
    key=st.sampled_from(["tenant", "groups", "Tenant", "ｔｅｎａｎｔ", "ten\u200bant"]),
)
def test_front_matter_anywhere_but_exactly_line_1_is_refused(before, fence, key):
    """Whatever precedes or disguises the opening fence, access keys are never dropped silently."""
    text = "".join(part + "\n" for part in before) + f"{fence}\n{key}: acme\n---\nSecret.\n"
    assume(not text.startswith("---\n"))  # the one accepted form, tested above
    with pytest.raises(DocumentError, match=r"line \d+: .*looks like front matter"):
        parse_front_matter(text, "doc.md")


# ---------------------------------------------------------------------------- ambiguous files


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\n---\ntenant: acme\ngroups: [hr]\n---\nx", r"line 2: '---' looks like front matter"),
        (" ---\ntenant: acme\n---\nx", r"line 1: ' ---' looks like front matter"),
        ("\u200b---\ntitle: t\n---\nx", r"line 1: '\\u200b---' looks like front matter"),
        ("+++\ntenant = 'acme'\n+++\nx", r"line 1: TOML front matter \('\+\+\+'\) is not"),
        ("\ntenant: acme\ngroups: [hr]\n\nx", r"line 2: the file opens with front-matter keys"),
        ('---\n"groups": [hr]\n---\nx', r"front matter line 2: unknown key"),
        (
            'text\n---\n"tenant": acme\n---\nx',
            r"line 2: a '---' line followed by tenant: looks like front matter",
        ),
        (
            "# Notes\n\n---\ntitle: x\ntenant: acme\n---\nx",
            r"line 3: a '---' line followed by tenant: looks like front matter",
        ),
        (
            "---\ntenant: acme\n---\nok\n---\n\ngroups: [hr]\n---\nx",
            r"line 5: a '---' line followed by groups: looks like front matter",
        ),
    ],
)
def test_front_matter_that_would_be_ignored_is_refused(tmp_path, text, message):
    path = write(tmp_path, "doc.md", text)
    with pytest.raises(DocumentError, match=f"^doc.md: {message}"):
        load_file(path, root=tmp_path)
    assert errors_by_id(load_folder(tmp_path)).keys() == {"doc.md"}  # not indexed as public


def test_a_utf8_bom_before_front_matter_is_dropped_and_the_front_matter_read(tmp_path):
    path = write(tmp_path, "doc.md", b"\xef\xbb\xbf---\ntenant: acme\ngroups: [hr]\n---\nx")
    doc = load_file(path, root=tmp_path)
    assert (doc.tenant, doc.groups, doc.text) == ("acme", ("hr",), "x")


@pytest.mark.parametrize(
    "text",
    [
        "Intro\n\n---\n\nA new section after a horizontal rule.\n",
        "Title\n---\nA setext heading.\n",
        "---\ntenant: acme\n---\nText\n---\nMore: text after a rule\n",
        "\n\n---\nNot front matter: a rule, then prose.\n",
        "---\ntenant: default\n---\nTenant: a person who rents a flat.\n",
    ],
)
def test_rules_and_headings_that_are_not_front_matter_still_load(tmp_path, text):
    load_file(write(tmp_path, "doc.md", text), root=tmp_path)


def test_a_file_in_a_tenant_folder_with_another_tenant_is_refused(tmp_path):
    write(tmp_path, "acme/a.md", "---\ntenant: acme\n---\nA")
    write(tmp_path, "acme/b.md", "---\ntenant: globex\n---\nB")
    result = load_folder(tmp_path)
    assert [d.id for d in result.documents] == ["acme/a.md"]
    assert errors_by_id(result)["acme/b.md"] == (
        "refused: its front matter names tenant 'globex' but it lies in folder 'acme/' "
        "of tenant 'acme'; correct the tenant or move the file"
    )


@pytest.mark.parametrize(
    "text", ["No front matter.", "---\ntitle: t\n---\nx", "---\ntenant: default\n---\nx"]
)
def test_a_file_in_a_tenant_folder_without_that_tenant_is_refused_not_public(tmp_path, text):
    write(tmp_path, "acme/a.md", "---\ntenant: acme\n---\nA")
    write(tmp_path, "acme/sub/notes.txt", text)
    result = load_folder(tmp_path)
    assert [d.id for d in result.documents] == ["acme/a.md"]
    assert errors_by_id(result)["acme/sub/notes.txt"].startswith(
        "refused: it names no tenant (it would be public in tenant 'default') "
        "but lies in folder 'acme/' of tenant 'acme'; add 'tenant: acme'"
    )


def test_folders_that_are_not_tenants_set_no_rule(tmp_path):
    write(tmp_path, "shared/welcome.txt", "Public note.")
    write(tmp_path, "policies/leave.md", "---\ntenant: acme\n---\nx")
    write(tmp_path, "top.md", "---\ntenant: shared-x\n---\nx")
    result = load_folder(tmp_path)
    assert result.errors == ()
    assert {d.id: d.tenant for d in result.documents} == {
        "policies/leave.md": "acme",
        "shared/welcome.txt": "default",
        "top.md": "shared-x",
    }


# ---------------------------------------------------------------------------- the sample corpus


@pytest.mark.skipif(not CORPUS.is_dir(), reason="sample corpus not present")
def test_sample_corpus_loads_cleanly():
    result = load_folder(CORPUS)
    assert result.errors == ()
    assert len(result.documents) > 0
    assert all(doc.tenant != "" and doc.text for doc in result.documents)
