"""The language model as query rewriter (raglab.generate.llm_rewrite): rewrites and HyDE."""

from __future__ import annotations

import pytest

from raglab.generate.llm_rewrite import LLMRewriter, rewriter_from_env
from tests.retrieve.test_query_expansion import FakeModel


def test_llm_rewriter_parses_lines_and_adds_hyde():
    model = FakeModel(
        ["1. reimbursement of costs\n- expense refund\n\n3) paid back\nextra", "Claims are paid."]
    )
    rewriter = LLMRewriter(model, n=3, hyde=True)
    assert rewriter.rewrites("refunds?") == [
        "reimbursement of costs",
        "expense refund",
        "paid back",
        "Claims are paid.",
    ]
    assert all(p.sources == () and p.user == "refunds?" for p in model.prompts)  # no documents sent


def test_rewriter_from_env_is_none_offline_and_needs_a_model(monkeypatch):
    monkeypatch.delenv("RAGLAB_LLM_URL", raising=False)
    assert rewriter_from_env() is None
    monkeypatch.setenv("RAGLAB_LLM_URL", "http://localhost:1/v1")
    monkeypatch.delenv("RAGLAB_LLM_MODEL", raising=False)
    with pytest.raises(ValueError, match="RAGLAB_LLM_MODEL is not"):
        rewriter_from_env()
    monkeypatch.setenv("RAGLAB_LLM_MODEL", "m")
    assert rewriter_from_env(hyde=True).hyde
