"""Pictures of scale: exact against approximate (HNSW) search, cold start against corpus size.

Notebook 11 draws what the benchmarks measured (`benchmarks/results/*.json`, committed), so
the figures are the same on every machine; only the small live demos run in the notebook.

The benchmark's vectors are synthetic, made here so that the benchmark and the notebook
draw the same set (`clustered_unit_vectors`): real MiniLM vectors for 100,000 chunks take
too long to make for a lesson. What is drawn is computed first, as plain data, and
tested (`frontier`, `fastest_setting`, `growth_exponent`); the drawing functions only draw
it, in the style of `raglab.workbook.viz` (white, 7 × 4.5 in, Okabe & Ito's colour-blind-safe
palette, PNG via `viz.show`). matplotlib is imported inside the functions that draw.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from raglab.validation import check_int
from raglab.workbook.viz import OKABE_ITO, QUESTION_COLOUR, _figure

__all__ = [
    "SCALE_FIELDS",
    "Setting",
    "Synthetic",
    "clustered_unit_vectors",
    "fastest_setting",
    "frontier",
    "growth_exponent",
    "load_benchmark",
    "plot_cold_start",
    "plot_hnsw_growth",
    "plot_recall_speed",
]

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
"""Where the benchmarks write their results, in a checkout of the repository."""

SCALE_FIELDS = ("documents", "chunks", "vector_bytes", "cold_ask_s", "peak_rss_mb")
"""The fields of a row of `scale.json` that `plot_cold_start` reads."""


# --- the synthetic vectors ----------------------------------------------------------------


class Synthetic(NamedTuple):
    """Unit float32 rows: `vectors` to search, `queries` drawn the same way (not among them)."""

    vectors: np.ndarray
    queries: np.ndarray


# The shape of the cloud, chosen so that its cosines look like MiniLM's on prose: unrelated
# rows about 0.13 apart (every row shares a common direction, as sentence embeddings do),
# rows of one topic about 0.5, a row's nearest neighbour about 0.7.
COMMON, TOPIC, SUBTOPIC, NOISE = 0.6, 1.0, 0.8, 0.9
SUBTOPICS = 10  # per topic
ZIPF = 0.8  # topic sizes: the r-th largest topic has weight 1 / r**0.8
BLOCK = 8192  # rows drawn at a time, so 100,000 rows never need a float64 copy in memory


def clustered_unit_vectors(
    n: int, *, queries: int = 0, dim: int = 384, topics: int = 1000, seed: int = 0
) -> Synthetic:
    """`n` unit vectors in `topics` clusters of uneven size, and `queries` more drawn alike.

    Each row is a common direction + its topic's centre + one of the topic's subtopics
    + noise, then normalised. The same arguments give the same rows on every machine
    (numpy's seeded PCG64), and the first rows do not depend on `n`: the first 25,000 of
    100,000 rows are the 25,000 rows.

    >>> data = clustered_unit_vectors(50, queries=5, dim=8, topics=4)
    >>> data.vectors.shape, data.queries.shape, data.vectors.dtype
    ((50, 8), (5, 8), dtype('float32'))
    >>> bool(np.allclose(np.linalg.norm(data.vectors, axis=1), 1, atol=1e-6))
    True
    """
    n = check_int("n", n, minimum=1)
    queries = check_int("queries", queries, minimum=0)
    dim = check_int("dim", dim, minimum=2)
    topics = check_int("topics", topics, minimum=1)
    rng = np.random.default_rng(seed)
    common = _unit(rng.standard_normal(dim, dtype=np.float32))
    centres = _unit(rng.standard_normal((topics, dim), dtype=np.float32))
    subtopics = _unit(rng.standard_normal((topics, SUBTOPICS, dim), dtype=np.float32))
    weights = 1.0 / np.arange(1, topics + 1) ** ZIPF
    # subtle: queries come from their own generator, so that asking for more of them
    # never changes the vectors (and the other way round)
    vectors = _draw(rng, common, centres, subtopics, weights, n)
    asked = _draw(np.random.default_rng([seed, 1]), common, centres, subtopics, weights, queries)
    return Synthetic(vectors, asked)


def _draw(
    rng: np.random.Generator,
    common: np.ndarray,
    centres: np.ndarray,
    subtopics: np.ndarray,
    weights: np.ndarray,
    n: int,
) -> np.ndarray:
    """`n` rows of the cloud, drawn BLOCK rows at a time (the same rows whatever `n` is)."""
    out = np.empty((n, centres.shape[1]), dtype=np.float32)
    for start in range(0, n, BLOCK):
        size = min(BLOCK, n - start)
        topic = rng.choice(len(centres), size=BLOCK, p=weights / weights.sum())[:size]
        sub = rng.integers(0, SUBTOPICS, size=BLOCK)[:size]
        noise = _unit(rng.standard_normal((BLOCK, centres.shape[1]), dtype=np.float32))[:size]
        mix = COMMON * common + TOPIC * centres[topic] + SUBTOPIC * subtopics[topic, sub]
        out[start : start + size] = _unit(mix + NOISE * noise)
    return out


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


# --- reading the benchmarks' results ------------------------------------------------------


def load_benchmark(name: str, *, folder: Path | None = None) -> dict[str, Any]:
    """A benchmark's committed results, `benchmarks/results/<name>` in the repository.

    The results are files of the repository, not of the installed package: run the
    notebook from a checkout (`git clone`) to read them.
    """
    path = (folder or RESULTS) / name
    if not path.is_file():
        raise FileNotFoundError(
            f"no benchmark results at {path}: run the notebook from a checkout of the "
            f"repository, or make them with python benchmarks/bench_*.py"
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON ({error})") from None


# --- what the figures mark, as data ---------------------------------------------------------


def frontier(speed: Sequence[float], recall: Sequence[float]) -> list[int]:
    """The points no other point beats on both speed and recall, fastest first.

    A point is on the frontier when every faster point has lower recall: the settings
    worth choosing from (the others are slower *and* no more accurate than one of them).

    >>> frontier([100, 50, 80, 10], [0.8, 0.9, 0.7, 0.99])
    [0, 1, 3]
    """
    if len(speed) != len(recall):
        raise ValueError(f"speed and recall differ in length ({len(speed)} and {len(recall)})")
    order = sorted(range(len(speed)), key=lambda i: (-speed[i], -recall[i], i))
    best, kept = -np.inf, []
    for i in order:
        if recall[i] > best:
            kept.append(i)
            best = recall[i]
    return kept


class Setting(NamedTuple):
    """One HNSW index and one `ef_search`: how fast and how accurate it searched."""

    m: int
    ef_construction: int
    ef_search: int
    recall: float
    queries_per_s: float


def settings(results: Mapping[str, Any]) -> list[Setting]:
    """Every (index, ef_search) pair of `hnsw.json`, in the file's order."""
    return [
        Setting(
            index["M"],
            index["ef_construction"],
            s["ef_search"],
            s["recall_at_10"],
            s["queries_per_s"],
        )
        for index in results["hnsw"]
        for s in index["searches"]
    ]


def fastest_setting(results: Mapping[str, Any], target: float) -> Setting | None:
    """The fastest setting whose recall@10 reaches `target`, or None if none does."""
    good = [s for s in settings(results) if s.recall >= target]
    return max(good, key=lambda s: s.queries_per_s, default=None)


def growth_exponent(x: Sequence[float], y: Sequence[float]) -> float:
    """The slope of log y against log x (least squares): y grows like x**slope.

    1 is linear growth, 0 is flat, 0.5 like a square root.

    >>> round(growth_exponent([1, 10, 100], [3, 30, 300]), 6)
    1.0
    """
    lx, ly = np.log(np.asarray(x, dtype=np.float64)), np.log(np.asarray(y, dtype=np.float64))
    if lx.shape != ly.shape or lx.size < 2 or np.ptp(lx) == 0:
        raise ValueError("growth_exponent needs two or more points with different x")
    return float(np.polyfit(lx, ly, 1)[0])


# --- drawing --------------------------------------------------------------------------------


def _log_axes(ax: Any, *, x: bool = True, y: bool = True) -> None:
    """Logarithmic axes labelled in plain numbers (200, 500, 1000), not powers of ten."""
    from matplotlib.ticker import FuncFormatter

    def major(value: float, _: int) -> str:
        return f"{value:,.10g}"

    def minor(value: float, _: int) -> str:  # only the 2s and 5s between two powers of ten
        leading = round(value / 10 ** np.floor(np.log10(value))) if value > 0 else 0
        return major(value, 0) if leading in (2, 5) else ""

    for on, axis, scale in ((x, ax.xaxis, ax.set_xscale), (y, ax.yaxis, ax.set_yscale)):
        if on:
            scale("log")
            axis.set_major_formatter(FuncFormatter(major))
            axis.set_minor_formatter(FuncFormatter(minor))


def _ticks_at(ax: Any, x: Sequence[float]) -> None:
    """x ticks at the measured sizes only: a few points on a log axis, each one named."""
    from matplotlib.ticker import NullFormatter

    ax.set_xticks(list(x), [f"{value:,.10g}" for value in x])
    ax.xaxis.set_minor_formatter(NullFormatter())


def plot_recall_speed(results: Mapping[str, Any], *, target: float = 0.95) -> Any:
    """recall@10 against queries per second: a line per HNSW index over its `ef_search`.

    Exact search is the star at recall 1; the ring marks the fastest setting that
    reaches `target` (dashed line). The x axis is logarithmic: each step is a factor.
    """
    fig, ax = _figure()
    for index, colour in zip(results["hnsw"], OKABE_ITO):
        searches = index["searches"]
        qps = [s["queries_per_s"] for s in searches]
        recall = [s["recall_at_10"] for s in searches]
        ax.plot(
            qps,
            recall,
            color=colour,
            lw=2,
            marker="o",
            ms=4,
            label=f"HNSW M={index['M']}, ef_construction={index['ef_construction']}",
        )
    exact = results["exact"]
    ax.plot(
        exact["queries_per_s"], 1.0, "*", color=QUESTION_COLOUR, ms=14, label="exact (raglab top_k)"
    )
    ax.axhline(target, color="grey", lw=1, ls="--")
    best = fastest_setting(results, target)
    if best is not None:
        _label_ef_search(ax, results, best)
        ax.plot(best.queries_per_s, best.recall, "o", ms=16, mfc="none", mec="black", mew=2)
        ratio = best.queries_per_s / exact["queries_per_s"]
        ax.annotate(
            f"fastest at recall ≥ {target:g}: M={best.m}, ef_search={best.ef_search}\n"
            f"recall {best.recall:.3f}, {best.queries_per_s:,.0f} queries/s ({ratio:,.0f}× exact)",
            (best.queries_per_s, best.recall),
            xytext=(-10, -45),
            textcoords="offset points",
            ha="right",
            fontsize=8,
            arrowprops={"arrowstyle": "-", "color": "black", "lw": 0.8},
        )
    _log_axes(ax, y=False)
    ax.set_xlabel("queries per second, one core (log scale)")
    ax.set_ylabel("recall@10 against exact search")
    ax.legend(loc="lower left", fontsize=8)
    setup = results["setup"]
    ax.set_title(f"{setup['vectors']:,} vectors of {setup['dim']} dimensions", fontsize=10)
    return fig


def _label_ef_search(ax: Any, results: Mapping[str, Any], best: Setting) -> None:
    """Write each ef_search beside its dot, on the line of the marked setting's index."""
    for index in results["hnsw"]:
        if (index["M"], index["ef_construction"]) != (best.m, best.ef_construction):
            continue
        for s in index["searches"]:
            ax.annotate(
                f"ef {s['ef_search']}",
                (s["queries_per_s"], s["recall_at_10"]),
                xytext=(4, 4),
                textcoords="offset points",
                fontsize=7,
            )


def plot_hnsw_growth(results: Mapping[str, Any]) -> Any:
    """Query latency against the number of vectors, exact and HNSW (both axes logarithmic)."""
    rows = results["growth"]
    n = [row["vectors"] for row in rows]
    fig, ax = _figure()
    series = (
        ("exact", "exact_latency_ms", QUESTION_COLOUR, "*"),
        (f"HNSW (ef_search={results['growth_ef_search']})", "hnsw_latency_ms", OKABE_ITO[3], "o"),
    )
    for name, key, colour, marker in series:
        ms = [row[key] for row in rows]
        slope = growth_exponent(n, ms)
        ax.plot(n, ms, color=colour, marker=marker, lw=2, label=f"{name}: grows like N^{slope:.2f}")
    _log_axes(ax)
    _ticks_at(ax, n)
    ax.set_xlabel("vectors searched, N (log scale)")
    ax.set_ylabel("milliseconds per query (log scale)")
    ax.legend(loc="center right", fontsize=8)
    ax.set_title("what one more vector costs a query", fontsize=10)
    return fig


def scale_rows(
    data: Mapping[str, Any],
    *,
    key: str = "rows",
    time_key: str = "cold_ask_s",
    source: str = "scale.json",
) -> list[dict[str, Any]]:
    """The rows of the cold-start benchmark under `key`, checked, smallest corpus first."""
    rows = data.get(key) if isinstance(data, Mapping) else None
    if not isinstance(rows, list) or len(rows) < 2:
        raise ValueError(f"{source}: needs a list {key!r} of two or more corpus sizes")
    for i, row in enumerate(rows):
        missing = [field for field in (*SCALE_FIELDS, time_key) if field not in row]
        if missing:
            raise ValueError(f"{source}: {key}[{i}] has no {', '.join(dict.fromkeys(missing))}")
    return sorted(rows, key=lambda row: row["documents"])


def plot_cold_start(
    data: Mapping[str, Any], *, time_key: str = "cold_ask_s", source: str = "scale.json"
) -> Any:
    """Cold `raglab ask` time and peak memory against corpus size, both axes logarithmic.

    `data["rows"]` is drawn solid; `data["compared"]`, if there (the code before a change,
    on the same corpora), dashed beside it. `time_key` picks the time: wall seconds
    (`cold_ask_s`) or, on a loaded machine, CPU seconds (`cold_ask_cpu_s`). The legend gives
    each curve's growth exponent (1 = linear in the corpus). The memory panel draws the
    vectors' own size (the floor for a process that copies the matrix) and twice that size
    (the project's goal for the peak).
    """
    series = [("now", scale_rows(data, time_key=time_key, source=source), "-")]
    if "compared" in data:
        before = scale_rows(data, key="compared", time_key=time_key, source=source)
        series.insert(0, ("before", before, "--"))
    fig, (left, right) = _figure(2)
    for name, rows, style in series:
        docs = [row["documents"] for row in rows]
        seconds = [row[time_key] for row in rows]
        peak = [row["peak_rss_mb"] for row in rows]
        left.plot(
            docs,
            seconds,
            color=OKABE_ITO[4],
            ls=style,
            marker="o",
            lw=2,
            label=f"{name}: N^{growth_exponent(docs, seconds):.2f}",
        )
        right.plot(
            docs,
            peak,
            color=OKABE_ITO[3],
            ls=style,
            marker="o",
            lw=2,
            label=f"peak, {name}: N^{growth_exponent(docs, peak):.2f}",
        )
    docs = [row["documents"] for row in series[-1][1]]
    vectors = [row["vector_bytes"] / 1e6 for row in series[-1][1]]
    right.plot(docs, vectors, color="grey", ls=":", marker="s", lw=1.5, label="the vectors' size")
    right.plot(docs, [2 * v for v in vectors], color="grey", lw=1, label="2× the vectors (goal)")
    cpu = "CPU " if "cpu" in time_key else ""
    left.set_ylabel(f"{cpu}seconds to the first answer")
    right.set_ylabel("MB")
    for ax in (left, right):
        _log_axes(ax)
        _ticks_at(ax, docs)
        ax.set_xlabel("documents (log scale)")
        ax.legend(loc="best", fontsize=8)
    left.set_title("a cold raglab ask", fontsize=10)
    right.set_title("its peak memory", fontsize=10)
    return fig
