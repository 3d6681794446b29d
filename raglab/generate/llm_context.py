"""A language model writes each contextual chunk's sentence, cached on disk per chunk.

Offline, a contextual chunk's header carries the document's first sentence, the same for
every chunk of it (`raglab.ingest.contextual`). With a model configured (RAGLAB_LLM_URL),
`LLMContextWriter` asks it, for each chunk, for a short sentence situating the chunk in
its document: the "contextual retrieval" recipe, where such sentences cut top-20 retrieval
failures by a third. Give it to `Chunker(contextual=True, context_writer=...)`; `raglab
index --contextual` does when RAGLAB_LLM_URL is set.

The prompt (`CONTEXT_INSTRUCTIONS`, then `CONTEXT_REQUEST` with the document and the
chunk; the document is cut to `MAX_DOCUMENT_CHARS`):

    system: You situate a passage within its document, to improve search retrieval of the
            passage. Reply with one short sentence and nothing else.
    user:   <document>
            {document}
            </document>
            Here is the chunk we want to situate within the whole document:
            <chunk>
            {chunk}
            </chunk>
            Give a short, one-sentence context situating this chunk in its document.

Each sentence is cached in the user's cache folder (`raglab.embed.cache_files`: private,
bounded, a corrupt file rebuilt), keyed by a digest of the model's name, the prompt's
version, the document and the chunk: the same chunk of the same document is asked once,
and a change to any of them asks again. The index records `name` ("llm:<model>:<prompt
version>"), so an index whose sentences another model wrote is rebuilt, not mixed.
The reply is only indexed, never quoted: it is cut to its first line and to the header's
length (`raglab.ingest.contextual.SUMMARY_CHARS`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from raglab.embed.cache_files import CacheFile, default_folder
from raglab.generate.generation import Generator
from raglab.generate.llm_env import model_from_env
from raglab.generate.prompting import Prompt
from raglab.records import Chunk, Document
from raglab.text import content_hash

PROMPT_VERSION = "1"
"""Changes whenever the prompt does: a cached sentence was written for one prompt."""

CONTEXT_INSTRUCTIONS = (
    "You situate a passage within its document, to improve search retrieval of the passage. "
    "Reply with one short sentence and nothing else."
)
CONTEXT_REQUEST = (
    "<document>\n{document}\n</document>\n"
    "Here is the chunk we want to situate within the whole document:\n"
    "<chunk>\n{chunk}\n</chunk>\n"
    "Give a short, one-sentence context situating this chunk in its document."
)

MAX_DOCUMENT_CHARS = 12_000
"""The document's characters sent with each chunk: a long manual is cut, not sent whole
for each of its chunks."""

MAX_ENTRIES = 200_000
"""Sentences one model's cache file keeps (a few hundred bytes each); the oldest go first."""


@dataclass(frozen=True, slots=True)
class LLMContextWriter:
    """A `raglab.ingest.contextual.ContextWriter` whose sentences a model writes.

    `model` names the model in the index and the cache (the generator does not say it);
    `folder` is the cache's (default: `default_folder()`). There is no writer without a
    cache: it would ask the model again for every chunk of every re-index.
    """

    generator: Generator
    model: str
    folder: Path | None = None

    @property
    def name(self) -> str:
        return f"llm:{self.model}:{PROMPT_VERSION}"

    def situate(self, doc: Document, chunk: Chunk) -> str:
        document = doc.text[:MAX_DOCUMENT_CHARS]
        key = _key(self.name, document, chunk.text)
        cache = self._cache()
        found = cache.read([key]).get(key)
        if found is not None:
            try:
                return found.decode("utf-8")
            except UnicodeDecodeError:
                pass  # not a sentence this writer stored: asked again, and replaced
        sentence = _first_line(self.generator.generate(context_prompt(document, chunk.text)))
        if sentence:
            cache.write({key: sentence.encode("utf-8")})
        return sentence

    def _cache(self) -> CacheFile:
        folder = self.folder if self.folder is not None else default_folder()
        path = folder / f"context-{content_hash(self.name)}.sqlite"
        return CacheFile(path, f"context\n{self.name}", MAX_ENTRIES)


def context_prompt(document: str, chunk: str) -> Prompt:
    """The prompt asking for `chunk`'s context sentence (the module docstring shows it)."""
    user = CONTEXT_REQUEST.format(document=document, chunk=chunk)
    return Prompt(chunk, (), CONTEXT_INSTRUCTIONS, user, boundary="")


def _key(name: str, document: str, chunk: str) -> bytes:
    """A digest of everything the sentence depends on (lengths first: no two splits of the
    same characters give one key)."""
    parts = [name, document, chunk]
    framed = "".join(f"{len(part)}:{part}" for part in parts)
    return hashlib.blake2b(framed.encode("utf-8"), digest_size=32).digest()


def _first_line(reply: str) -> str:
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def context_writer_from_env() -> LLMContextWriter | None:
    """An `LLMContextWriter` for the model the environment configures
    (`llm_env.model_from_env`), or None when RAGLAB_LLM_URL is not set: the offline first
    sentence."""
    generator = model_from_env()
    return None if generator is None else LLMContextWriter(generator, generator.model)
