"""The agent's tools: every call as the asker, never anyone else, within a budget."""

from __future__ import annotations

import pytest

from raglab.agent.tools import MAX_K, Action, Budget, Toolbox
from raglab.records import Principal

ACME = Principal("ana", "acme")
GLOBEX = Principal("gus", "globex")


def test_no_action_can_name_a_principal():
    with pytest.raises(TypeError):
        Action("read", doc_id="acme/hr/salary-bands.md", principal=ACME)  # type: ignore[call-arg]


def test_read_of_another_tenants_document_is_empty_like_a_missing_one(corpus_index):
    tools = Toolbox(corpus_index, GLOBEX)
    assert tools.read("acme/policies/leave.md") == []
    assert tools.read("acme/no-such-file.md") == []
    own = tools.read("globex/policies/warranty.md")
    assert own and all(c.doc_id == "globex/policies/warranty.md" for c in own)
    assert [c.index for c in own] == sorted(c.index for c in own)


def test_read_of_a_group_document_needs_the_group(corpus_index):
    assert Toolbox(corpus_index, ACME).read("acme/hr/salary-bands.md") == []
    hr = Principal("hana", "acme", frozenset({"hr"}))
    assert Toolbox(corpus_index, hr).read("acme/hr/salary-bands.md")


def test_search_keyword_and_documents_see_only_what_the_asker_may_read(corpus_index):
    tools = Toolbox(corpus_index, GLOBEX)
    for hits in (
        tools.search("salary bands leave policy", 10),
        tools.keyword("salary warranty", 10),
    ):
        assert hits and all(h.chunk.tenant == "globex" and not h.chunk.groups for h in hits)
    ids = [doc_id for doc_id, _ in tools.documents()]
    assert "globex/policies/warranty.md" in ids
    assert not [d for d in ids if not d.startswith("globex/") or "partners" in d]


def test_actions_and_budgets_refuse_bad_values():
    with pytest.raises(ValueError, match="unknown tool 'delete'"):
        Action("delete")
    with pytest.raises(ValueError, match="k must be"):
        Action("search", "x", k=MAX_K + 1)
    with pytest.raises(ValueError, match="steps must be"):
        Budget(steps=0)
    with pytest.raises(ValueError, match="a search needs a non-empty query"):
        Toolbox.search(None, "  ")  # type: ignore[arg-type]
