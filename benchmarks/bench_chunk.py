"""How fast are the chunkers?

1. `chunk()` (the seed's character windows) against a plain slicing loop with the same
   stopping rule: the floor for any Python character chunker. Target: >= 0.9x. Both
   `Chunker` kinds (Chunk records with offsets) are measured against the same loop.
2. `Chunker(kind="structure")` (headings, paragraphs, sentences, with offsets and Chunk
   records) against langchain's RecursiveCharacterTextSplitter at the same size and
   overlap (plain strings, no offsets). Target: >= 2x.

Run: .venv/bin/python benchmarks/bench_chunk.py   (langchain-text-splitters is optional)
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import best_time, make_words, print_table, zipf_weights

from raglab.ingest.chunking import Chunker, chunk
from raglab.records import Document

TARGET_MB = 20  # megabytes (millions of characters; the text is ASCII)
SIZE, OVERLAP = 800, 100
SEED = 0


def generated_text(n_chars: int, *, markdown: bool, seed: int = SEED) -> str:
    """Seeded text of Zipfian made-up words in sentences and paragraphs.

    `markdown=True` adds headings, bullet lists and fenced code blocks (with "#"
    comment lines); `markdown=False` is plain prose: paragraphs only.
    """
    rng = random.Random(seed)
    words = make_words(5000, rng)
    weights = zipf_weights(len(words))

    def sentence() -> str:
        return " ".join(rng.choices(words, weights, k=rng.randint(5, 25))).capitalize() + "."

    blocks: list[str] = []
    total = 0
    while total < n_chars:
        r = rng.random() if markdown else 1.0
        if r < 0.06:
            block = "#" * rng.randint(1, 3) + " " + " ".join(rng.choices(words, k=3)).title()
        elif r < 0.14:
            block = "\n".join("- " + sentence() for _ in range(rng.randint(2, 6)))
        elif r < 0.16:
            code = "\n".join("# " + sentence() for _ in range(rng.randint(1, 4)))
            block = "```python\n" + code + "\n```"
        else:
            block = " ".join(sentence() for _ in range(rng.randint(1, 9)))
        blocks.append(block)
        total += len(block) + 2
    return "\n\n".join(blocks)


def plain_slicing(text: str, size: int, overlap: int) -> list[str]:
    """The floor: one slice per window, same starts and stopping rule as `chunk()`."""
    n, step = len(text), size - overlap
    return [text[i : i + size] for i in range(0, max(n - overlap, 1), step)] if n else []


def main() -> None:
    text = generated_text(TARGET_MB * 1_000_000, markdown=True)
    mb = len(text) / 1e6
    assert chunk(text, SIZE, OVERLAP) == plain_slicing(text, SIZE, OVERLAP)
    t_plain = best_time(lambda: plain_slicing(text, SIZE, OVERLAP))
    t_chunk = best_time(lambda: chunk(text, SIZE, OVERLAP))
    doc = Document(id="bench.md", text=text)
    t_chars = best_time(lambda: Chunker("chars", SIZE, OVERLAP).split(doc))
    t_structure = best_time(lambda: Chunker("structure", SIZE, OVERLAP).split(doc))
    print(f"{mb:.1f} MB of generated text, size={SIZE}, overlap={OVERLAP}, best of repeats")
    print_table(
        ["character chunker", "MB/s", "fraction of the slicing loop (target >= 0.9 for chunk)"],
        [
            ["plain slicing loop", f"{mb / t_plain:.0f}", "1.00"],
            ["chunk()", f"{mb / t_chunk:.0f}", f"{t_plain / t_chunk:.2f}"],
            [
                "Chunker('chars').split (Chunk records)",
                f"{mb / t_chars:.0f}",
                f"{t_plain / t_chars:.2f}",
            ],
            [
                "Chunker('structure').split (Chunk records)",
                f"{mb / t_structure:.0f}",
                f"{t_plain / t_structure:.2f}",
            ],
        ],
    )
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter
    except ImportError:
        print("langchain-text-splitters is not installed: structure comparison skipped")
        return
    splitter = RecursiveCharacterTextSplitter(chunk_size=SIZE, chunk_overlap=OVERLAP)
    chunker = Chunker("structure", SIZE, OVERLAP)
    rows = []
    for label, markdown in (("markdown", True), ("prose", False)):
        text = generated_text(TARGET_MB * 1_000_000, markdown=markdown)
        mb = len(text) / 1e6
        doc = Document(id="bench.md", text=text)
        t_struct = best_time(lambda doc=doc: chunker.split(doc))
        t_lc = best_time(lambda text=text: splitter.split_text(text), repeat=3)
        n_struct, n_lc = len(chunker.split(doc)), len(splitter.split_text(text))
        rows.append(
            [
                label,
                f"{mb / t_struct:.0f} ({n_struct} chunks)",
                f"{mb / t_lc:.0f} ({n_lc} chunks)",
                f"{t_lc / t_struct:.2f}",
            ]
        )
    print()
    print_table(
        ["text", "Chunker('structure') MB/s", "langchain Recursive MB/s", "speed-up (target >= 2)"],
        rows,
    )


if __name__ == "__main__":
    main()
