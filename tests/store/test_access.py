"""Tests for raglab.store.access: the access rule and its vectorised form."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab.records import Chunk, Document, Principal
from raglab.store import access
from raglab.store.access import AccessIndex, can_read, eligible_rows


def chunk(doc_id: str, tenant: str = "default", groups: tuple[str, ...] = ()) -> Chunk:
    return Chunk(doc_id, 0, "text", 0, 4, tenant=tenant, groups=groups)


@pytest.mark.parametrize(
    ("principal", "tenant", "groups", "allowed"),
    [
        (Principal("ann", "acme"), "acme", (), True),  # open document of my tenant
        (Principal("ann", "acme", {"hr"}), "acme", (), True),  # groups do not hide open documents
        (
            Principal("ann", "acme", {"hr"}),
            "acme",
            ("hr", "managers"),
            True,
        ),  # one shared group is enough
        (Principal("ann", "acme", {"it"}), "acme", ("hr",), False),  # no shared group
        (Principal("ann", "acme"), "acme", ("hr",), False),  # no groups at all
        (Principal("eve", "globex"), "acme", (), False),  # other tenant, open document
        (
            Principal("eve", "globex", {"hr"}),
            "acme",
            ("hr",),
            False,
        ),  # same group name, other tenant
        (Principal("dan"), "default", (), True),  # the default tenant is a tenant like any other
        (Principal("dan"), "acme", (), False),
    ],
)
def test_can_read_hand_worked(principal, tenant, groups, allowed):
    assert can_read(principal, chunk("a.md", tenant, groups)) is allowed
    assert can_read(principal, Document("a.md", "x", tenant=tenant, groups=groups)) is allowed


def test_eligible_rows_hand_worked():
    chunks = [
        chunk("a.md", "acme"),
        chunk("b.md", "acme", ("hr",)),
        chunk("c.md", "globex"),
        chunk("d.md", "acme", ("hr", "it")),
        chunk("e.md", "acme", ("it",)),
    ]
    assert eligible_rows(Principal("u", "acme"), chunks).tolist() == [0]
    assert eligible_rows(Principal("u", "acme", {"hr"}), chunks).tolist() == [0, 1, 3]
    assert eligible_rows(Principal("u", "acme", {"hr", "it"}), chunks).tolist() == [0, 1, 3, 4]
    assert eligible_rows(Principal("u", "globex", {"hr", "it"}), chunks).tolist() == [2]
    assert eligible_rows(Principal("u", "nobody"), chunks).tolist() == []


@pytest.mark.parametrize("n", [0, 1, 2])
def test_eligible_rows_small_inputs_are_int64_ascending(n):
    chunks = [chunk(f"{i}.md", "acme") for i in range(n)]
    rows = eligible_rows(Principal("u", "acme"), chunks)
    assert rows.dtype == np.int64
    assert rows.tolist() == list(range(n))


def test_returned_rows_are_read_only_so_the_cache_cannot_be_corrupted():
    index = AccessIndex([chunk("a.md", "acme"), chunk("b.md", "acme", ("hr",))])
    rows = index.eligible_rows(Principal("u", "acme", {"hr"}))
    with pytest.raises(ValueError):
        rows[0] = 1
    assert index.eligible_rows(Principal("v", "acme", {"hr"})).tolist() == [0, 1]


def test_key_ignores_groups_that_open_nothing_in_the_tenant():
    index = AccessIndex([chunk("a.md", "acme", ("hr",)), chunk("b.md", "globex", ("it",))])
    assert index.key(Principal("u", "acme", {"hr", "it", "zzz"})) == ("acme", ("hr",))


def test_cache_stays_bounded(monkeypatch):
    monkeypatch.setattr(access, "CACHE_SIZE", 3)
    chunks = [chunk(f"{g}.md", "acme", (g,)) for g in "abcdef"]
    index = AccessIndex(chunks)
    for g in "abcdef":
        assert index.eligible_rows(Principal("u", "acme", {g})).tolist() == ["abcdef".index(g)]
    assert len(index._cache) <= 3


tenants = st.sampled_from(["acme", "globex", "default"])
group_sets = st.sets(st.sampled_from(["hr", "it", "sales", "ops"]), max_size=3)


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(st.tuples(tenants, group_sets), max_size=30),
    tenant=tenants,
    groups=group_sets,
)
def test_eligible_rows_matches_can_read_row_by_row(items, tenant, groups):
    chunks = [chunk(f"{i}.md", t, tuple(sorted(g))) for i, (t, g) in enumerate(items)]
    principal = Principal("u", tenant, groups)
    expected = [i for i, c in enumerate(chunks) if can_read(principal, c)]
    assert eligible_rows(principal, chunks).tolist() == expected
