"""The language model the environment configures, for every step that can use one.

RAGLAB_LLM_URL (an OpenAI-compatible server), RAGLAB_LLM_MODEL (the model's name) and
RAGLAB_API_KEY (optional) name one model; query rewriting, a conversation's standalone
rewrite, the contextual chunk header and the long-context comparison all read it here, so
they agree on what "a configured model" is and refuse the same half-configuration.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from raglab.generate.openai_http import OpenAIChatGenerator


def model_from_env() -> OpenAIChatGenerator | None:
    """The model in RAGLAB_LLM_URL, or None when it is not set (offline). A URL without
    RAGLAB_LLM_MODEL is refused: a server's default model is nobody's choice."""
    url = os.environ.get("RAGLAB_LLM_URL")
    if not url:
        return None
    from raglab.generate.openai_http import OpenAIChatGenerator  # a remote model: loaded if used

    model = os.environ.get("RAGLAB_LLM_MODEL", "")
    if not model:
        raise ValueError("RAGLAB_LLM_URL is set but RAGLAB_LLM_MODEL is not: name the model")
    return OpenAIChatGenerator(url, model, os.environ.get("RAGLAB_API_KEY"))
