"""Follow-ups measured: modes, crowding and leaks, on a few shipped conversations."""

from __future__ import annotations

import dataclasses

import pytest

from raglab.conversation.conversations import load_conversations
from raglab.conversation.history import MemoryHistory, owner_key
from raglab.evaluation.follow_ups import history_leaks, play
from raglab.samples import sample_conversations


@pytest.fixture(scope="module")
def conversations():
    return load_conversations(sample_conversations())[:4]


def test_the_gold_standalone_form_is_searched_in_gold_mode(corpus_index, conversations):
    results = play(corpus_index, conversations[0], "gold")
    assert [r.standalone for r in results] == [t.standalone for t in conversations[0].turns[1:]]
    assert all(r.displaced == 0 for r in results)


def test_no_rewrite_searches_the_question_as_asked(corpus_index, conversations):
    results = play(corpus_index, conversations[0], "none")
    assert [r.standalone for r in results] == [t.question for t in conversations[0].turns[1:]]


def test_unknown_mode_is_refused(corpus_index, conversations):
    with pytest.raises(ValueError, match="mode must be one of none, offline, gold"):
        play(corpus_index, conversations[0], "llm")


class LeakyHistory(MemoryHistory):
    """Searches every owner's turns: what the leak count must catch."""

    def search(self, owner, query, k, *, conversation=None):
        everyone = [
            dataclasses.replace(owner, user=user, tenant=tenant) for tenant, user in self._rows
        ]
        return [hit for o in everyone for hit in MemoryHistory.search(self, o, query, k)][:k]


@pytest.mark.parametrize(("kind", "leaks"), [(MemoryHistory, False), (LeakyHistory, True)])
def test_leaks_are_counted(corpus_index, conversations, kind, leaks):
    history = kind()
    for conversation in conversations[:2]:
        play(corpus_index, conversation, "offline", history=history)
    assert owner_key(conversations[0].principal) in history._rows
    assert (history_leaks(history, conversations[:2], corpus_index) > 0) == leaks


class DepthDependent:
    """An index whose ranking depends on how deep it is asked (as min-max fusion's can)."""

    def __init__(self, index):
        self.index = index

    def search(self, question, principal, *, k, method="hybrid", **options):
        hits = self.index.search(question, principal, k=k, method=method, **options)
        return hits if k <= 5 else hits[::-1]

    def __getattr__(self, name):
        return getattr(self.index, name)


def test_displacement_compares_the_prompt_with_the_same_search_without_history(
    corpus_index, conversations
):
    """Seen failing before: the prompt without history was built from a deeper search's top k."""
    results = play(DepthDependent(corpus_index), conversations[0], "gold")
    assert [r.displaced for r in results] == [0] * len(results)
