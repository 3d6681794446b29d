"""Model profiles: the settings that travel together, chosen as one unit.

There is no general RAG, only model-specific RAG. A chunk size means something only in the
tokens of the embedder that reads the chunk (MiniLM reads 254 word pieces of a text and
ignores the rest); a fusion weight only for the embedder whose scores it weighs; an
abstention threshold only for the scores it was calibrated on; a context budget only in
the tokens of the model that reads the prompt. So a `Profile` names them together:

- indexing:  the embedder (and the version it was made for), the chunker with its size and
             overlap in *that embedder's tokens*, contextual headers on or off;
- retrieval: k, the method, the fusion of dense and BM25, the reranker on or off;
- answering: the answerer (the offline extractive one with its calibrated abstention rule,
             or an OpenAI-compatible model by URL and name), the context budget in its tokens.

The shipped profiles are data, `raglab/profiles.toml`: `offline-fast` (hashing),
`offline-neural` (MiniLM), `llm` (MiniLM retrieval, a model at RAGLAB_LLM_URL). Yours go in
a TOML file of the same shape, one table per profile, read from `user_profiles_path()`
(~/.config/raglab/profiles.toml) when it exists and from a file you name (`--profiles
FILE`, `profile(name, profiles_file=...)`).

An index records the profile it was built with (`raglab.pipeline.Index`); asking it with a
profile whose embedder or chunking differs is refused (`refusal`), never silently compared.

The chunker counts characters (`raglab.ingest.chunking`), so a size in tokens becomes
characters at the embedder's `CHARS_PER_TOKEN`, measured on the sample corpus: a chunk's
token count is then close to the profile's on English prose, not exact.

>>> p = profile("offline-fast")
>>> p.embedder, p.chunk_tokens, p.chunker().size
('hashing', 130, 780)
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from fractions import Fraction
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raglab.embed.embedders import available_embedders
from raglab.generate.abstention import load_rule
from raglab.ingest.chunking import KINDS, Chunker
from raglab.query import METHODS
from raglab.retrieve.fusion import FUSIONS, Fusion
from raglab.text import tokenize
from raglab.validation import check_int, check_number

if TYPE_CHECKING:
    from raglab.embed.tokens import TokenCount
    from raglab.generate.openai_http import OpenAIChatGenerator

SHIPPED_FILE = "profiles.toml"
"""The shipped profiles, package data beside this module."""

CHARS_PER_TOKEN = {"hashing": 6.0, "lsa": 6.0, "minilm": 4.1}
"""Characters per token of each embedder's tokens on the sample corpus (80,433 characters):
hashing and LSA read words (`raglab.text.tokenize`, 6.0), MiniLM WordPiece pieces (4.1).
`tests/test_profiles.py` measures them again. Another embedder: 4, the usual estimate."""

READS_TOKENS = {"minilm": 254}
"""The most tokens of a text an embedder reads: MiniLM's 256, less [CLS] and [SEP]
(`raglab.embed.reading`). A longer chunk would be embedded from its beginning alone."""

ANSWERERS = ("extractive", "openai")
CONTEXT_TOKENIZERS = ("wordpiece", "approx")


class ProfileError(ValueError):
    """A profile file or record that cannot be used: one line naming the file, the profile
    and the key."""


class ProfileMismatch(ValueError):
    """An index asked with a profile whose embedder or chunking differs from its own."""


@dataclass(frozen=True, slots=True)
class Profile:
    """One model profile: the settings that travel together (the module docstring).

    `chunk_tokens`, `overlap_tokens`: in the embedder's tokens (`CHARS_PER_TOKEN`).
    `abstention_rule`: the extractive answerer's abstention rule (default: the embedder's own).
    `llm_url`, `llm_model`: the "openai" answerer's server; "$NAME" is read from the
    environment when the model is asked. `context_tokens`: the sources' budget in the
    answerer's tokens, counted by `context_tokenizer` ("wordpiece": MiniLM's, "approx":
    four characters a token).
    """

    name: str
    embedder: str
    chunk_tokens: int
    about: str = ""
    embedder_version: str | None = None
    chunker_kind: str = "structure"
    overlap_tokens: int = 0
    contextual: bool = False
    k: int = 5
    retriever: str = "hybrid"
    fusion: str = "rrf"
    dense_weight: float = 0.5
    reranker: bool = False
    answerer: str = "extractive"
    abstention_rule: str | None = None
    llm_url: str | None = None
    llm_model: str | None = None
    context_tokens: int = 1500
    context_tokenizer: str = "wordpiece"

    def __post_init__(self) -> None:
        # a wrong type is a TypeError, a value out of bounds a ValueError (raglab.validation)
        for name, minimum in WHOLE_NUMBERS.items():
            check_int(name, getattr(self, name), minimum=minimum)
        weight = check_number("dense_weight", self.dense_weight, minimum=0, maximum=1)
        object.__setattr__(self, "dense_weight", weight)
        for name, kind in TEXT_AND_FLAGS.items():
            value = getattr(self, name)
            if not isinstance(value, kind) and not (value is None and name in OPTIONAL):
                what = "true or false" if kind is bool else "a string"
                raise TypeError(f"{key_of(name)} must be {what} (got {key_of(name)}={value!r})")
        for check in CHECKS:
            reason = check(self)
            if reason:
                raise ValueError(reason)
        if self.answerer == "extractive" and self.abstention_rule is None:
            object.__setattr__(self, "abstention_rule", self.embedder)

    @property
    def chunk_chars(self) -> int:
        return to_chars(self.chunk_tokens, self.embedder)

    @property
    def overlap_chars(self) -> int:
        return to_chars(self.overlap_tokens, self.embedder)

    def chunker(self) -> Chunker:
        """The chunker this profile indexes with, its sizes in characters."""
        return Chunker(
            self.chunker_kind, self.chunk_chars, self.overlap_chars, contextual=self.contextual
        )

    def fusion_rule(self) -> Fusion:
        """How hybrid search fuses the dense and keyword rankings."""
        return Fusion(self.fusion, self.dense_weight)

    def count_tokens(self) -> TokenCount:
        """The counter of the context budget: MiniLM's WordPiece, or the 4-characters estimate."""
        # as in `build_prompt`: the tokenizer loads when a budget is counted, not on every ask
        from raglab.embed.tokens import approx_tokens, wordpiece_counter

        return wordpiece_counter() if self.context_tokenizer == "wordpiece" else approx_tokens

    def model(self, *, timeout: float = 60.0) -> OpenAIChatGenerator:
        """The "openai" answerer: the server and model named, "$NAME" read from the
        environment now; the key from RAGLAB_API_KEY."""
        from raglab.generate.openai_http import OpenAIChatGenerator  # a remote model: if used

        if self.answerer != "openai":
            raise ValueError(f"profile {self.name!r} answers offline ({self.answerer})")
        url, model = self._setting("llm_url"), self._setting("llm_model")
        return OpenAIChatGenerator(url, model, os.environ.get("RAGLAB_API_KEY"), timeout=timeout)

    def _setting(self, name: str) -> str:
        value = str(getattr(self, name))
        if not value.startswith("$"):
            return value
        found = os.environ.get(value[1:], "")
        if not found:
            raise ValueError(
                f"profile {self.name!r} reads {name} from {value[1:]}, which is not set: "
                f"export {value[1:]}=... (an OpenAI-compatible server), or choose an offline profile"
            )
        return found

    def as_dict(self) -> dict[str, Any]:
        """The profile as its TOML table holds it, with its name: what an index records."""
        return {key_of(name): value for name, value in asdict(self).items()}

    def describe(self) -> str:
        """One line: the name, the embedder and the chunking, in tokens and characters."""
        unit = TOKEN_UNITS.get(self.embedder, "tokens")
        return (
            f"{self.name} ({self.embedder}, {self.chunker_kind} chunks of {self.chunk_tokens} "
            f"{unit} = {self.chunk_chars} characters)"
        )


TOKEN_UNITS = {"hashing": "words", "lsa": "words", "minilm": "word pieces"}

KEYS = {"chunker_kind": "chunker"}
"""A field whose TOML key differs from its name (`Profile.chunker()` is the Chunker)."""


def key_of(field_name: str) -> str:
    return KEYS.get(field_name, field_name)


def field_of(key: str) -> str:
    return {key: name for name, key in KEYS.items()}.get(key, key)


WHOLE_NUMBERS = {"chunk_tokens": 1, "overlap_tokens": 0, "k": 1, "context_tokens": 1}
"""The fields that are whole numbers, and the least each may be."""

TEXT_AND_FLAGS: dict[str, type] = {
    "name": str,
    "embedder": str,
    "about": str,
    "embedder_version": str,
    "chunker_kind": str,
    "contextual": bool,
    "retriever": str,
    "fusion": str,
    "reranker": bool,
    "answerer": str,
    "abstention_rule": str,
    "llm_url": str,
    "llm_model": str,
    "context_tokenizer": str,
}
OPTIONAL = frozenset({"embedder_version", "abstention_rule", "llm_url", "llm_model"})
REQUIRED = ("embedder", "chunk_tokens")


def _choice(key: str, value: object, choices: tuple[str, ...] | list[str]) -> str:
    if value in choices:
        return ""
    return f"{key}: unknown {value!r}; choose from: {', '.join(choices)}"


def _check_embedder(p: Profile) -> str:
    return _choice("embedder", p.embedder, available_embedders())


def _check_chunks(p: Profile) -> str:
    if p.overlap_tokens >= p.chunk_tokens:
        return f"overlap_tokens must be < chunk_tokens (got overlap_tokens={p.overlap_tokens})"
    reads = READS_TOKENS.get(p.embedder)
    if reads is not None and p.chunk_tokens > reads:
        return f"chunk_tokens: {p.embedder} reads at most {reads} tokens of a chunk (got {p.chunk_tokens})"
    return _choice("chunker", p.chunker_kind, KINDS)


def _check_retrieval(p: Profile) -> str:
    return _choice("retriever", p.retriever, METHODS) or _choice("fusion", p.fusion, FUSIONS)


def _check_answerer(p: Profile) -> str:
    reason = _choice("answerer", p.answerer, ANSWERERS) or _choice(
        "context_tokenizer", p.context_tokenizer, CONTEXT_TOKENIZERS
    )
    if reason:
        return reason
    if p.answerer == "openai":
        missing = [key for key in ("llm_url", "llm_model") if not getattr(p, key)]
        if missing:
            return f"{missing[0]}: the openai answerer needs a server URL and a model name"
        if p.abstention_rule is not None:
            return "abstention_rule: only the extractive answerer has an abstention rule"
        return ""
    for key in ("llm_url", "llm_model"):
        if getattr(p, key) is not None:
            return f"{key}: only the openai answerer asks a server"
    rule = p.abstention_rule or p.embedder
    if load_rule(rule).profile != rule:  # an unknown name gives the words rule
        return f"abstention_rule: no abstention rule is fitted for {rule!r}"
    return ""


CHECKS = (_check_embedder, _check_chunks, _check_retrieval, _check_answerer)


def to_chars(tokens: int, embedder: str) -> int:
    """`tokens` of `embedder`'s tokens as characters, at its `CHARS_PER_TOKEN`, rounded half up.

    subtle: in exact fractions, not floats (195 × 4.1 is 799.4999… in binary), so a size
    never depends on a processor's rounding.

    >>> to_chars(195, "minilm")
    800
    """
    ratio = Fraction(str(CHARS_PER_TOKEN.get(embedder, 4.0)))
    return math.floor(tokens * ratio + Fraction(1, 2))


def embedder_tokens(embedder: str) -> TokenCount:
    """A counter of the tokens `embedder` reads: words, or MiniLM's word pieces."""
    if embedder == "minilm":
        from raglab.embed.tokens import wordpiece_counter  # reads MiniLM's vocabulary

        return wordpiece_counter()
    return lambda text: len(tokenize(text))


# --- reading profiles -------------------------------------------------------------------------


def parse_profile(name: str, table: object, where: str) -> Profile:
    """One TOML table as a `Profile`; `ProfileError` names `where`, the profile and the key."""

    def refuse(reason: str) -> ProfileError:
        return ProfileError(f"{where}: profile {name!r}: {reason}")

    if not isinstance(table, Mapping):
        raise refuse("must be a table of settings ([NAME] and key = value lines)")
    known = [key_of(spec.name) for spec in fields(Profile) if spec.name != "name"]
    for key in table:
        if key not in known:
            raise refuse(f"unknown key {key!r}; the keys are: {', '.join(sorted(known))}")
    for key in REQUIRED:
        if key not in table:
            raise refuse(f"{key}: missing (every profile names its embedder and chunk_tokens)")
    try:
        return Profile(name=name, **{field_of(key): value for key, value in table.items()})
    except (TypeError, ValueError) as error:
        raise refuse(str(error)) from None


def read_profiles(path: str | Path) -> dict[str, Profile]:
    """Every profile of the TOML file at `path`, by name."""
    where = str(path)
    try:
        tables = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ProfileError(f"{where}: not valid TOML ({error})") from None
    except OSError as error:
        raise ProfileError(f"{where}: cannot read it ({error.strerror or error})") from None
    return {name: parse_profile(name, table, where) for name, table in tables.items()}


@cache
def shipped_profiles() -> dict[str, Profile]:
    """The profiles shipped with raglab (`raglab/profiles.toml`)."""
    text = resources.files("raglab").joinpath(SHIPPED_FILE).read_text("utf-8")
    where = f"raglab/{SHIPPED_FILE}"
    return {name: parse_profile(name, t, where) for name, t in tomllib.loads(text).items()}


def user_profiles_path() -> Path:
    """Where your own profiles are read from when the file exists:
    $XDG_CONFIG_HOME/raglab/profiles.toml, by default ~/.config/raglab/profiles.toml."""
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "raglab" / "profiles.toml"


def available_profiles(profiles_file: str | Path | None = None) -> dict[str, Profile]:
    """The shipped profiles, yours (`user_profiles_path()`, if it exists) and those of
    `profiles_file`; a name may be defined once."""
    found = dict(shipped_profiles())
    origins = dict.fromkeys(found, f"raglab/{SHIPPED_FILE}")
    user = user_profiles_path()
    for path in [user] if user.is_file() else []:
        _merge(found, origins, path)
    if profiles_file is not None:
        _merge(found, origins, Path(profiles_file))
    return found


def _merge(found: dict[str, Profile], origins: dict[str, str], path: Path) -> None:
    for name, value in read_profiles(path).items():
        if name in found:
            raise ProfileError(
                f"{path}: profile {name!r} is already defined in {origins[name]}: choose another name"
            )
        found[name], origins[name] = value, str(path)


def profile(name: str | Profile, *, profiles_file: str | Path | None = None) -> Profile:
    """The profile called `name` (`available_profiles`); a `Profile` is returned as it is."""
    if isinstance(name, Profile):
        return name
    found = available_profiles(profiles_file)
    if name not in found:
        raise ValueError(f"unknown profile {name!r}; choose from: {', '.join(sorted(found))}")
    return found[name]


def from_record(record: Mapping[str, Any], where: str) -> Profile:
    """The profile an index recorded (`Profile.as_dict()`, plus what overrode it)."""
    table = {key: value for key, value in record.items() if key not in ("name", "overridden")}
    return parse_profile(str(record.get("name")), table, where)


# --- a profile against an index -----------------------------------------------------------------


def differences(p: Profile, meta: Mapping[str, Any]) -> list[str]:
    """How an index's recorded embedder and chunker (`VectorStore.meta`) differ from the
    profile's: what would make its vectors and chunks another profile's."""
    found = []
    if meta.get("embedder_name") != p.embedder:
        found.append(f"embedder {meta.get('embedder_name')} instead of {p.embedder}")
    recorded_version = meta.get("embedder_version")
    if (
        meta.get("embedder_name") == p.embedder
        and isinstance(recorded_version, str)  # a learned embedder records one per partition
        and p.embedder_version is not None
        and recorded_version != p.embedder_version
    ):
        found.append(f"embedder version {recorded_version} instead of {p.embedder_version}")
    chunker = meta.get("chunker") or {}
    wanted = p.chunker().params()
    for key in sorted(set(chunker) | set(wanted)):
        if chunker.get(key) != wanted.get(key):
            unit = " characters" if key in ("size", "overlap") else ""
            found.append(f"chunker {key} {chunker.get(key)!r} instead of {wanted.get(key)!r}{unit}")
    return found


def refusal(p: Profile, meta: Mapping[str, Any], index: str | None) -> ProfileMismatch | None:
    """The error for asking an index (at path `index`, if known) with `p`, or None when its
    embedder and chunking are `p`'s. It says what differs and what to run."""
    found = differences(p, meta)
    if not found:
        return None
    recorded = meta.get("profile")
    built = f"no profile ({meta.get('embedder_name')})"
    if isinstance(recorded, Mapping):
        changed = recorded.get("overridden") or []
        built = f"{recorded.get('name')} ({meta.get('embedder_name')})" + (
            f" with {', '.join(changed)} overridden" if changed else ""
        )
    if index is None:
        where, target = "the index", "FILE"
    else:  # an index holds one embedder's vectors: another embedder needs another index
        where = f"index {index!r}"
        target = index if meta.get("embedder_name") == p.embedder else _beside(index, p.name)
    return ProfileMismatch(
        f"{where} was built with {built}; profile {p.describe()} differs in "
        f"{'; '.join(found)}: re-index with `raglab index DIR --index {target} --profile {p.name}`"
    )


def _beside(index: str, name: str) -> str:
    """A new index path for another embedder (an index holds one embedder's vectors)."""
    path = Path(index)
    safe = re.sub(r"[^\w.-]", "-", name)
    return str(path.with_name(f"{path.stem}-{safe}{path.suffix}"))


def overridden(p: Profile, embedder: str, chunker_params: Mapping[str, Any]) -> list[str]:
    """The index-time settings of `p` that the effective embedder and chunker replaced,
    sorted by name."""
    found = ["embedder"] if embedder != p.embedder else []
    wanted = p.chunker().params()
    names = {"kind": "chunker", "size": "chunk_tokens", "overlap": "overlap_tokens"}
    for key in sorted(set(wanted) | set(chunker_params)):
        if wanted.get(key) != chunker_params.get(key):
            found.append(names.get(key, key))
    return sorted(found)
