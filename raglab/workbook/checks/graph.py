"""Checks for notebook 13 (beyond one search): communities of a small graph.

Exercise `label_propagation`: the learner writes

    label_propagation(edges) -> dict[str, str]

node -> community label for an undirected weighted graph given as {(a, b): weight}, by the
deterministic label propagation of `raglab.graph.communities`: every node starts with its
own label; rounds visit the nodes in sorted order, each taking the label its neighbours
carry with the most summed weight (its own on a tie if its own is among the best, else
the smallest tied label), seeing the labels already changed this round; it stops after a
round with no change. The check compares communities (which nodes share a label), on
hand-made graphs and on hidden random ones.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from raglab.graph.communities import groups_of
from raglab.graph.communities import label_propagation as reference_label_propagation
from raglab.workbook.checks.core import RANDOM_CASES, SEED, Case, CheckResult, Outcome, run_cases

__all__ = ["check_label_propagation", "reference_label_propagation"]


def _case(name: str, edges: Mapping[tuple[str, str], float]) -> Case:
    return Case(name, (dict(edges),), expected=groups_of(reference_label_propagation(edges)))


TRIANGLES = {
    ("a", "b"): 1,
    ("b", "c"): 1,
    ("a", "c"): 1,
    ("c", "d"): 0.5,
    ("d", "e"): 1,
    ("e", "f"): 1,
    ("d", "f"): 1,
}
CASES: list[Case] = [
    _case("no edges", {}),
    _case("one edge", {("x", "y"): 1}),
    _case("two triangles, a thin bridge", TRIANGLES),
    _case("a path: ties keep your own label", {("a", "b"): 1, ("b", "c"): 1}),
    _case("the heavier neighbour wins", {("a", "b"): 3, ("a", "c"): 1, ("c", "d"): 1}),
    _case("two separate pairs", {("p", "q"): 1, ("r", "s"): 2}),
    _case("a star", {("hub", n): 1 for n in "vwxyz"}),
]


def random_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[Case]:
    """Hidden graphs: a few dense groups of 3 to 6 nodes, thin weighted links between them."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        nodes = [f"n{j:02d}" for j in range(rng.randint(4, 18))]
        rng.shuffle(nodes)
        edges: dict[tuple[str, str], float] = {}
        start = 0
        while start < len(nodes):
            group = nodes[start : start + rng.randint(3, 6)]
            for a in group:
                for b in group:
                    if a < b and rng.random() < 0.8:
                        edges[(a, b)] = float(rng.randint(1, 3))
            start += len(group)
        for _ in range(rng.randint(0, 3)):
            a, b = rng.sample(nodes, 2)
            edges.setdefault((min(a, b), max(a, b)), 0.5)
        cases.append(_case(f"hidden graph {i} ({len(nodes)} nodes)", edges))
    return cases


def _judge(case: Case, outcome: Outcome) -> str | None:
    value = outcome.value
    if not isinstance(value, dict):
        return f"expected a dict node -> label, got a {type(value).__name__}"
    nodes = sorted({n for pair in case.args[0] for n in pair})
    if sorted(value) != nodes:
        return f"expected a label for every node of the edges ({len(nodes)}), got {len(value)}"
    got = groups_of(value)
    if got == case.expected:
        return None
    return f"communities {case.expected}, got {got}"


def check_label_propagation(fn: Callable[[Any], dict[str, str]]) -> CheckResult:
    """Check a learner's `label_propagation(edges) -> dict[str, str]`."""
    randoms = random_cases()
    summary = f"all {len(CASES)} graphs and {len(randoms)} hidden graphs give the same communities"
    return run_cases("label_propagation", "label_propagation", fn, CASES + randoms, _judge, summary)


# Exercise id -> check, for this notebook; raglab.workbook.checks.CHECKS merges every notebook's.
CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    "label_propagation": check_label_propagation
}
