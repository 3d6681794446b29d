"""Notebook 13's check: fails on the stub and on plausible wrong answers, passes on the solution."""

from __future__ import annotations

from collections import defaultdict

import pytest

from raglab.workbook import checks
from raglab.workbook.checks import CHECKS
from raglab.workbook.checks.graph import check_label_propagation, reference_label_propagation

# These tests use the reference (and variations of it) as a learner's function.
pytestmark = pytest.mark.usefixtures("references_reachable")


def test_the_check_is_registered_under_its_exercise_id():
    assert CHECKS["label_propagation"] is check_label_propagation
    assert checks.check_label_propagation is check_label_propagation
    assert reference_label_propagation in checks.REFERENCES


def test_the_reference_passes():
    assert check_label_propagation(reference_label_propagation).passed


def test_the_stub_fails():
    def stub(edges):
        raise NotImplementedError()

    assert not check_label_propagation(stub).passed


def _propagation(edges, *, synchronous=False, keep_own=True, ignore_weights=False):
    neighbours = defaultdict(dict)
    for (a, b), w in edges.items():
        neighbours[a][b] = neighbours[b][a] = 1.0 if ignore_weights else w
    labels = {n: n for n in sorted(neighbours)}
    for _ in range(100):
        new = dict(labels)
        for node in labels:
            seen = labels if synchronous else new
            votes = defaultdict(float)
            for other, w in neighbours[node].items():
                votes[seen[other]] += w
            best = max(votes.values())
            tied = [label for label, v in votes.items() if v == best]
            new[node] = seen[node] if keep_own and seen[node] in tied else min(tied)
        if new == labels:
            break
        labels = new
    return labels


@pytest.mark.parametrize(
    "mistake",
    [
        {"synchronous": True},  # every node sees last round's labels
        {"keep_own": False},  # a tie always goes to the smallest label
        {"ignore_weights": True},  # counts neighbours instead of summing weights
    ],
    ids=str,
)
def test_a_plausible_wrong_rule_fails(mistake):
    assert not check_label_propagation(lambda edges: _propagation(edges, **mistake)).passed


def test_the_same_rule_written_again_passes():
    assert check_label_propagation(_propagation).passed


def test_labels_that_miss_a_node_fail():
    assert not check_label_propagation(lambda edges: {}).passed
