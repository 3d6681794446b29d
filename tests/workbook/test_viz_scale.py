"""raglab.workbook.viz_scale: the synthetic vectors, the marks computed right, the figures drawn (Agg)."""

from __future__ import annotations

import io
import json

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

from raglab.workbook import viz_scale
from raglab.workbook.viz_scale import (
    clustered_unit_vectors,
    fastest_setting,
    frontier,
    growth_exponent,
    load_benchmark,
    plot_cold_start,
    plot_hnsw_growth,
    plot_recall_speed,
)


def hnsw_results() -> dict:
    """A small hnsw.json: two indexes, three ef_search each, and the growth rows."""

    def searches(points):
        return [
            {"ef_search": ef, "recall_at_10": r, "latency_ms": 1e3 / q, "queries_per_s": q}
            for ef, r, q in points
        ]

    return {
        "setup": {"vectors": 1000, "dim": 8},
        "exact": {"queries_per_s": 50.0, "latency_ms": 20.0, "bytes_per_vector": 32},
        "hnsw": [
            {
                "M": 8,
                "ef_construction": 100,
                "build_s": 1.0,
                "bytes_per_vector": 100,
                "searches": searches([(10, 0.80, 4000.0), (32, 0.93, 2000.0), (64, 0.97, 900.0)]),
            },
            {
                "M": 16,
                "ef_construction": 100,
                "build_s": 2.0,
                "bytes_per_vector": 130,
                "searches": searches([(10, 0.90, 3000.0), (32, 0.96, 1500.0), (64, 0.99, 700.0)]),
            },
        ],
        "growth_ef_search": 64,
        "growth": [
            {
                "vectors": n,
                "exact_latency_ms": n / 1000,
                "hnsw_latency_ms": 0.1 * np.log(n),
                "hnsw_recall_at_10": 0.97,
                "build_s": n / 100,
                "insert_ms_per_vector": 1.0,
            }
            for n in (1000, 2000, 4000)
        ],
    }


def scale_results() -> dict:
    """A small scale.json: cold ask grows linearly, memory like a square root."""
    return {
        "rows": [
            {
                "documents": d,
                "chunks": 4 * d,
                "vector_bytes": 4 * d * 1536,
                "cold_ask_s": d / 10_000,
                "peak_rss_mb": np.sqrt(d),
                "index_build_s": 1.0,
                "index_mb": 1.0,
            }
            for d in (20_000, 2_000, 200_000)  # out of order: drawn sorted
        ]
    }


# --- the synthetic vectors -------------------------------------------------------------------


def test_the_vectors_are_unit_rows_the_same_on_every_call():
    first = clustered_unit_vectors(300, queries=20, dim=16, topics=10, seed=3)
    again = clustered_unit_vectors(300, queries=20, dim=16, topics=10, seed=3)
    assert first.vectors.shape == (300, 16) and first.queries.shape == (20, 16)
    assert first.vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first.vectors, axis=1), 1, atol=1e-6)
    assert np.array_equal(first.vectors, again.vectors)
    assert np.array_equal(first.queries, again.queries)
    other = clustered_unit_vectors(300, queries=20, dim=16, topics=10, seed=4)
    assert not np.array_equal(first.vectors, other.vectors)


def test_a_prefix_is_the_smaller_set_and_queries_do_not_shift_the_vectors():
    big = clustered_unit_vectors(10_000, queries=50, dim=8, topics=20)
    small = clustered_unit_vectors(3_000, queries=5, dim=8, topics=20)
    assert np.array_equal(big.vectors[:3_000], small.vectors)
    assert np.array_equal(big.queries[:5], small.queries)
    assert not (big.queries[:, None, :] == big.vectors[None, :, :]).all(axis=2).any()


def test_the_cloud_is_clustered_like_prose_embeddings():
    data = clustered_unit_vectors(4_000, queries=100, topics=100)
    scores = data.queries @ data.vectors.T
    nearest = np.sort(scores, axis=1)[:, -1].mean()
    typical = scores.mean()
    assert 0.05 < typical < 0.25  # unrelated texts: a little alike (a common direction)
    assert nearest > typical + 0.3  # the nearest rows are much closer than the rest


@pytest.mark.parametrize(("name", "value"), [("n", 0), ("queries", -1), ("dim", 1), ("topics", 0)])
def test_bad_sizes_are_refused_by_name(name, value):
    kwargs = {"n": 10, name: value}
    with pytest.raises(ValueError, match=f"{name} must be an integer"):
        clustered_unit_vectors(**kwargs)


# --- the marks ------------------------------------------------------------------------------


def test_the_frontier_keeps_the_points_nothing_beats_on_both():
    speed = [100, 50, 80, 10, 80]
    recall = [0.8, 0.9, 0.7, 0.99, 0.85]
    assert frontier(speed, recall) == [0, 4, 1, 3]  # 2 is slower and worse than 0
    assert frontier([], []) == []
    with pytest.raises(ValueError, match="differ in length"):
        frontier([1, 2], [0.5])


def test_the_fastest_setting_reaching_the_target():
    results = hnsw_results()
    best = fastest_setting(results, 0.95)
    assert (best.m, best.ef_search, best.recall, best.queries_per_s) == (16, 32, 0.96, 1500.0)
    assert fastest_setting(results, 0.90).queries_per_s == 3000.0
    assert fastest_setting(results, 0.999) is None


def test_growth_exponent_reads_the_power():
    n = np.array([1e3, 1e4, 1e5])
    assert growth_exponent(n, 3 * n) == pytest.approx(1.0)
    assert growth_exponent(n, np.sqrt(n)) == pytest.approx(0.5)
    assert growth_exponent(n, [7, 7, 7]) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="two or more points"):
        growth_exponent([5, 5], [1, 2])


def test_load_benchmark_reads_json_and_names_what_is_wrong(tmp_path):
    (tmp_path / "ok.json").write_text(json.dumps({"rows": []}), encoding="utf-8")
    assert load_benchmark("ok.json", folder=tmp_path) == {"rows": []}
    with pytest.raises(FileNotFoundError, match="missing.json"):
        load_benchmark("missing.json", folder=tmp_path)
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.json is not valid JSON"):
        load_benchmark("bad.json", folder=tmp_path)


# --- the figures ----------------------------------------------------------------------------


def test_recall_against_speed_draws_a_line_per_index_and_marks_the_fastest_good_setting():
    fig = plot_recall_speed(hnsw_results(), target=0.95)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    assert "queries per second" in ax.get_xlabel() and "recall@10" in ax.get_ylabel()
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:3] == [
        "HNSW M=8, ef_construction=100",
        "HNSW M=16, ef_construction=100",
        "exact (raglab top_k)",
    ]
    # the ring: an unlabelled, unfilled marker exactly on the fastest setting at recall >= 0.95
    rings = [line for line in ax.get_lines() if line.get_markerfacecolor() == "none"]
    assert len(rings) == 1
    assert (rings[0].get_xdata()[0], rings[0].get_ydata()[0]) == (1500.0, 0.96)
    note, *ef_labels = sorted(ax.texts, key=lambda text: -len(text.get_text()))
    assert "M=16, ef_search=32" in note.get_text() and "30× exact" in note.get_text()
    # the marked index's line carries its ef_search values, the other line none
    assert sorted(text.get_text() for text in ef_labels) == ["ef 10", "ef 32", "ef 64"]
    assert {text.xy for text in ef_labels} == {(3000.0, 0.90), (1500.0, 0.96), (700.0, 0.99)}
    fig.savefig(io.BytesIO(), format="png")


def test_recall_against_speed_without_a_good_setting_marks_nothing():
    ax = plot_recall_speed(hnsw_results(), target=0.999).axes[0]
    assert not [line for line in ax.get_lines() if line.get_markerfacecolor() == "none"]
    assert not ax.texts


def test_growth_draws_exact_and_hnsw_on_log_axes_with_their_exponents():
    ax = plot_hnsw_growth(hnsw_results()).axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[0] == "exact: grows like N^1.00"
    assert labels[1].startswith("HNSW (ef_search=64): grows like N^0.")


def test_cold_start_draws_time_and_memory_against_documents_sorted():
    fig = plot_cold_start(scale_results())
    left, right = fig.axes
    for ax in (left, right):
        assert ax.get_xscale() == ax.get_yscale() == "log"
        assert "documents" in ax.get_xlabel()
    assert left.get_ylabel() == "seconds to the first answer"
    (time_line,) = left.get_lines()
    assert list(time_line.get_xdata()) == [2_000, 20_000, 200_000]
    assert time_line.get_label() == "now: N^1.00"
    peak, vectors, goal = right.get_lines()
    assert peak.get_label() == "peak, now: N^0.50"
    assert list(vectors.get_ydata()) == [d * 4 * 1536 / 1e6 for d in (2_000, 20_000, 200_000)]
    assert list(goal.get_ydata()) == [2 * y for y in vectors.get_ydata()]
    fig.savefig(io.BytesIO(), format="png")  # drawing sets the tick labels
    ticks = [t.get_text() for t in left.xaxis.get_majorticklabels() if t.get_text()]
    assert ticks == ["2,000", "20,000", "200,000"]  # the measured sizes, in plain numbers
    values = [t.get_text() for t in right.yaxis.get_majorticklabels() if t.get_text()]
    assert values and not [t for t in values if "^" in t or "{" in t]


def test_cold_start_draws_the_code_before_dashed_and_cpu_time_when_asked():
    data = scale_results()
    for row in data["rows"]:
        row["cold_ask_cpu_s"] = row["cold_ask_s"] / 2
    data["compared"] = [
        {**row, "cold_ask_cpu_s": row["documents"] / 1000, "peak_rss_mb": row["documents"] / 10}
        for row in data["rows"]
    ]
    left, right = plot_cold_start(data, time_key="cold_ask_cpu_s").axes
    assert left.get_ylabel() == "CPU seconds to the first answer"
    before, now = left.get_lines()
    assert (before.get_label(), before.get_linestyle()) == ("before: N^1.00", "--")
    assert (now.get_label(), now.get_linestyle()) == ("now: N^1.00", "-")
    assert list(now.get_ydata()) == [d / 20_000 for d in (2_000, 20_000, 200_000)]
    labels = [line.get_label() for line in right.get_lines()]
    assert labels[:2] == ["peak, before: N^1.00", "peak, now: N^0.50"]


def test_cold_start_refuses_rows_without_a_field_naming_it():
    data = scale_results()
    del data["rows"][1]["peak_rss_mb"]
    with pytest.raises(ValueError, match=r"scale.json: rows\[1\] has no peak_rss_mb"):
        plot_cold_start(data)
    with pytest.raises(ValueError, match="two or more corpus sizes"):
        plot_cold_start({"rows": data["rows"][:1]})
    with pytest.raises(ValueError, match=r"rows\[0\] has no cold_ask_cpu_s"):
        plot_cold_start(scale_results(), time_key="cold_ask_cpu_s")


def test_the_committed_hnsw_results_draw():
    results = load_benchmark("hnsw.json")
    assert results["setup"]["vectors"] >= 100_000 and results["setup"]["dim"] == 384
    for draw in (plot_recall_speed, plot_hnsw_growth):
        assert isinstance(draw(results), Figure)


def test_matplotlib_is_not_imported_by_the_module_itself():
    import subprocess
    import sys

    code = "import sys, raglab.workbook.viz_scale; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert viz_scale.__all__  # the module is what it says it is
