"""raglab.generate.redaction: a secret is kept out of printed text, however it is encoded."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from raglab.generate.redaction import HIDDEN, WITHHELD, decoded_views, hide_secret
from tests.generate.test_llm_client_hostile import echoes

KEYS = st.text(alphabet=string.ascii_letters + string.digits + "-_./+=~", min_size=12, max_size=48)


@given(KEYS, st.sampled_from(sorted(echoes("k"))))
def test_no_view_of_the_printed_text_holds_the_key(key, form):
    text = f'{{"error": "invalid api key", "echo": "{echoes(key)[form]}", "hint": "see docs"}}'
    shown = hide_secret(text, key)
    assert not any(key.casefold() in view.casefold() for view in decoded_views(shown))


def test_text_without_the_key_is_left_as_it_is():
    text = '{"error": "model \'llama3.2\' not found", "code": 404, "id": "c2VydmVyLTE="}'
    assert hide_secret(text, "sk-abc123xyz789") == text
    assert hide_secret(text, None) == hide_secret(text, "") == text


def test_the_key_as_written_is_blanked_and_the_rest_kept():
    assert hide_secret("Bearer SK-ABC123XYZ789 rejected", "sk-abc123xyz789") == (
        f"Bearer {HIDDEN} rejected"
    )


def test_a_text_still_holding_the_key_encoded_is_withheld_whole():
    assert hide_secret("echo: c2stYWJjMTIzeHl6Nzg5", "sk-abc123xyz789") == WITHHELD


def test_a_placeholder_key_is_blanked_only_as_written():
    """ "EMPTY" or "ollama" is what local servers take as a key: no secret, and looked for in
    any case it would blank ordinary words."""
    text = "Empty reply from the ollama server (key EMPTY)"
    assert hide_secret(text, "EMPTY") == "Empty reply from the ollama server (key ***)"
    assert hide_secret(text, "ollama") == "Empty reply from the *** server (key EMPTY)"
