"""Communities of an entity graph: label propagation, written from scratch, deterministic.

Label propagation (Raghavan, Albert and Kumara, 2007): every node starts with its own
label; in turn, each node takes the label its neighbours carry with the most edge weight.
Labels spread through densely connected groups and stop at their thin borders; when no
node changes, each label is a community.

The textbook version visits nodes in random order and breaks ties at random, so two runs
can disagree. Here the order is fixed (nodes sorted, asynchronous updates: a node sees the
labels its predecessors took this round) and so is the tie rule (keep your own label if it
is among the best, else the smallest), so the same graph always gives the same communities.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from raglab.graph.building import EntityGraph

__all__ = ["MAX_ROUNDS", "Community", "communities", "groups_of", "label_propagation"]

MAX_ROUNDS = 100
"""Rounds before giving up on a graph that never settles (two labels trading places)."""


def label_propagation(edges: Mapping[tuple[str, str], float]) -> dict[str, str]:
    """node -> label, for the undirected weighted graph `edges` ((a, b) -> weight).

    Rounds over the nodes in sorted order; each node takes the label with the largest
    summed weight among its neighbours (keeping its own on a tie, else the smallest
    tied label), seeing the labels already changed this round. Stops after a round in
    which nothing changed, or after `MAX_ROUNDS`.

    >>> edges = {("a", "b"): 1, ("b", "c"): 1, ("a", "c"): 1, ("c", "d"): 0.5,
    ...          ("d", "e"): 1, ("e", "f"): 1, ("d", "f"): 1}
    >>> label_propagation(edges)
    {'a': 'b', 'b': 'b', 'c': 'b', 'd': 'e', 'e': 'e', 'f': 'e'}
    """
    neighbours: dict[str, dict[str, float]] = defaultdict(dict)
    for (a, b), weight in edges.items():
        if a != b:
            neighbours[a][b] = neighbours[a].get(b, 0.0) + weight
            neighbours[b][a] = neighbours[b].get(a, 0.0) + weight
    labels = {node: node for node in sorted({n for pair in edges for n in pair})}
    for _ in range(MAX_ROUNDS):
        changed = False
        for node in labels:
            votes: dict[str, float] = defaultdict(float)
            for other, weight in neighbours[node].items():
                votes[labels[other]] += weight
            if not votes:
                continue
            best = max(votes.values())
            tied = [label for label, weight in votes.items() if weight == best]
            new = labels[node] if labels[node] in tied else min(tied)
            if new != labels[node]:
                labels[node], changed = new, True
        if not changed:
            break
    return labels


def groups_of(labels: Mapping[str, str]) -> list[list[str]]:
    """The communities of `labels` as sorted lists of nodes, largest first (then by first node).

    >>> groups_of({"a": "x", "b": "y", "c": "x"})
    [['a', 'c'], ['b']]
    """
    groups: dict[str, list[str]] = defaultdict(list)
    for node in sorted(labels):
        groups[labels[node]].append(node)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


@dataclass(frozen=True, slots=True)
class Community:
    """A community of a graph: its number (0 is the largest) and its entity keys, the most
    connected first."""

    number: int
    entities: tuple[str, ...]


def communities(graph: EntityGraph, *, min_size: int = 2) -> list[Community]:
    """The communities of `graph` with at least `min_size` entities, largest first."""
    degree: dict[str, int] = defaultdict(int)
    for r in graph.relations.values():
        degree[r.a] += r.weight
        degree[r.b] += r.weight
    found: list[Community] = []
    for group in groups_of(label_propagation(graph.weights())):
        if len(group) >= min_size:
            ranked = tuple(sorted(group, key=lambda key: (-degree[key], key)))
            found.append(Community(len(found), ranked))
    return found
