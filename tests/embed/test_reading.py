import pytest

from raglab.embed.embedders import embedder
from raglab.embed.reading import sentence_embedding


def test_hashing_reads_everything_and_lsa_is_refused():
    reading = sentence_embedding(embedder("hashing"))
    assert reading.fits("word " * 10_000)
    with pytest.raises(ValueError, match="does not learn from the chunks \\(got 'lsa'\\)"):
        sentence_embedding(embedder("lsa"))


def test_minilm_reads_254_word_pieces_besides_cls_and_sep():
    reading = sentence_embedding(embedder("minilm"))
    assert reading.max_tokens == 254
    assert reading.fits("leave " * 254) and not reading.fits("leave " * 255)
