"""BERT's WordPiece tokenizer, uncased, in pure Python: text -> the ids a BERT model reads.

Two steps, as in Hugging Face's `BertTokenizer`:

    text ─► basic tokenizer (drop controls, space out CJK and punctuation, strip accents,
            lowercase, split) ─► WordPiece (each word into the longest vocabulary pieces,
            pieces after the first marked "##") ─► [CLS] ids [SEP]

The special tokens ([PAD], [UNK], [CLS], [SEP], [MASK]) are part of the vocabulary; a
literal "[CLS]" typed in the text becomes the special token, as Hugging Face does.
`raglab.embed.minilm` feeds these ids to its network.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from pathlib import Path

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
MAX_WORD_CHARS = 100  # longer "words" become [UNK] whole, as in BERT

# Special tokens are matched in the raw text, case-sensitively, before any normalising:
# Hugging Face's tokenizer turns a literal "[CLS]" typed in a sentence into the special token.
_SPECIAL_RE = re.compile("(" + "|".join(re.escape(t) for t in (PAD, UNK, CLS, SEP, MASK)) + ")")

# CJK ideographs get spaces around them: the vocabulary has one entry per character.
_CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)  # fmt: skip


# Most text is ASCII, where the rules above reduce to: \t \n \r become spaces, other
# control characters go, and a word is a run of letters and digits or one other symbol.
# str.translate and one regex do that in C; tests check it against the general path.
_ASCII_CLEANUP = {i: None for i in (*range(32), 127)} | {ord(c): " " for c in "\t\n\r"}
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+|[^a-z0-9 ]")


@lru_cache(maxsize=65536)
def _char_class(char: str) -> str:
    """'drop' (control), 'space', 'cjk', 'punct' or 'plain' — the basic tokenizer's view."""
    if char in "\t\n\r":
        return "space"
    category = unicodedata.category(char)
    # Controls, format characters (e.g. U+200B) and private use are dropped. Unassigned code
    # points (Cn) are kept: Hugging Face's Unicode tables do not count them as "other".
    if category in ("Cc", "Cf", "Co", "Cs") or char == "\ufffd":
        return "drop"
    if char.isspace():
        return "space"
    if any(lo <= ord(char) <= hi for lo, hi in _CJK_RANGES):
        return "cjk"
    # ASCII symbols such as $ + < = > ^ ` | ~ count as punctuation too (BERT's rule).
    if category.startswith("P") or (char.isascii() and not char.isalnum()):
        return "punct"
    return "plain"


class WordPieceTokenizer:
    """BERT's uncased tokenizer in pure Python, giving the same ids as Hugging Face's.

    Checked on 5,634 lines of prose, code and edge cases (accents, CJK, ligatures, Σ, İ,
    control characters, literal "[CLS]"). Known gap: about 500 rare code points that entered
    Unicode after the tables Hugging Face's tokenizer uses (new punctuation and marks of
    rare scripts) can split differently, since Python's `unicodedata` is newer.

    >>> tok = WordPieceTokenizer({PAD: 0, UNK: 1, CLS: 2, SEP: 3, "un": 4, "##aff": 5,
    ...                           "##able": 6, "!": 7})
    >>> tok.encode("Unaffable!")
    [2, 4, 5, 6, 7, 3]
    """

    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab
        self.unk_id = vocab[UNK]
        self._word_cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_file(cls, path: str | Path) -> WordPieceTokenizer:
        """One token a line; the line number is the id."""
        lines = Path(path).read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return cls({token: i for i, token in enumerate(lines)})

    def encode(self, text: str, max_tokens: int = 256) -> list[int]:
        """[CLS] + word pieces + [SEP], keeping the first `max_tokens - 2` pieces."""
        ids: list[int] = []
        for i, part in enumerate(_SPECIAL_RE.split(text)):
            if i % 2:  # split() with a group puts the matched special tokens at odd positions
                ids.append(self.vocab[part])
                continue
            for word in self.words(part):
                ids.extend(self.wordpiece(word))
        return [self.vocab[CLS], *ids[: max_tokens - 2], self.vocab[SEP]]

    @staticmethod
    def normalise(text: str) -> str:
        """Drop controls, unify spaces, space out CJK, strip accents, lowercase."""
        if text.isascii():
            return text.translate(_ASCII_CLEANUP).lower()
        out = []
        for char in text:
            kind = _char_class(char)
            if kind == "space":
                out.append(" ")
            elif kind == "cjk":
                out.append(f" {char} ")
            elif kind != "drop":
                out.append(char)
        # Accents: decompose (é -> e + ◌́) and drop the combining marks (category Mn).
        decomposed = unicodedata.normalize("NFD", "".join(out))
        text = "".join(c for c in decomposed if unicodedata.category(c) != "Mn")
        # subtle: str.lower() turns a word-final Σ into ς; Hugging Face lowercases each
        # character on its own, which always gives σ.
        return "".join(c.lower() for c in text) if "Σ" in text else text.lower()

    def words(self, text: str) -> list[str]:
        """Split the normalised text on spaces, and every punctuation mark into its own word."""
        text = self.normalise(text)
        if text.isascii():
            return _ASCII_WORD_RE.findall(text)
        return self._split_words(text)

    @staticmethod
    def _split_words(text: str) -> list[str]:
        """`words` for any normalised text, character by character."""
        words = []
        for chunk in text.split():
            if all(_char_class(c) != "punct" for c in chunk):
                words.append(chunk)
                continue
            current = ""
            for char in chunk:
                if _char_class(char) == "punct":
                    words.extend([current, char] if current else [char])
                    current = ""
                else:
                    current += char
            if current:
                words.append(current)
        return words

    def wordpiece(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first pieces; pieces after the first carry '##'.

        A word that cannot be covered by vocabulary pieces becomes a single [UNK].
        """
        if word in self._word_cache:
            return self._word_cache[word]
        pieces: list[int] = []
        start = 0
        while start < len(word) and len(word) <= MAX_WORD_CHARS:
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    pieces.append(self.vocab[piece])
                    start = end
                    break
            else:  # no piece fits at `start`
                break
        result = tuple(pieces) if start == len(word) else (self.unk_id,)
        if len(self._word_cache) < 500_000:  # bounded: a stream of unique junk can't grow it
            self._word_cache[word] = result
        return result
