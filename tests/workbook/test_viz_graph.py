"""Notebook 13's graph picture: deterministic, coloured by community, one reader's documents only."""

from __future__ import annotations

import pytest

from raglab import Index, Principal, sample_corpus
from raglab.graph.reader import GraphIndex
from raglab.workbook.viz_graph import graph_picture, plot_reader_graphs


@pytest.fixture(scope="module")
def graphs():
    return GraphIndex(Index.from_folder(sample_corpus()))


def test_a_reader_of_one_tenant_is_drawn_from_their_tenant_alone(graphs):
    picture = graph_picture(graphs.view(Principal("ann", "acme")))
    assert picture.doc_ids and all(d.startswith("acme/") for d in picture.doc_ids)
    assert not any(
        d.startswith(("acme/hr/", "acme/managers/", "acme/finance/")) for d in picture.doc_ids
    )


def test_the_picture_is_deterministic_and_one_colour_per_community(graphs):
    view = graphs.view(Principal("gus", "globex"))
    first, again = (
        graph_picture(view),
        graph_picture(GraphIndex(graphs.index).view(Principal("gus", "globex"))),
    )
    assert first == again
    for community in view.communities[:7]:
        assert len({first.colours[key] for key in community.entities}) == 1
    assert all(a in first.positions and b in first.positions for a, b in first.edges)


def test_plot_draws_one_panel_per_reader_and_checks_its_titles(graphs):
    views = [graphs.view(Principal("ann", "acme")), graphs.view(Principal("gus", "globex"))]
    fig = plot_reader_graphs(views, ["acme", "globex"])
    assert len(fig.axes) == 2
    with pytest.raises(ValueError, match="one title per view"):
        plot_reader_graphs(views, ["acme"])
