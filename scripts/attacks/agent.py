"""The agent that searches again: no planner, offline or a model, reads past the asker.

Every tool runs as the asker (`raglab.agent.tools.Toolbox`); these attacks try to make
the plan itself ask for what the asker may not read: a model that reads another tenant's
document by id, one that writes a principal into its reply, one that searches with text
copied from a document it should not see, and the offline planner led by a question that
names another tenant's project.
"""

from __future__ import annotations

import json
from pathlib import Path

from attacks.common import CORPUS, answer_body, fixed_server, run, traceback_in

SALARY_DOC = "acme/hr/salary-bands.md"
SALARY_FIGURES = ("94,500", "117,500", "142,500")  # midpoints only the People team may see


def _agent(question: str, tenant: str, model_reply: str | None = None) -> dict | str:
    """`raglab ask --agent --json` as a user of `tenant` with no groups; with `model_reply`
    a model server that gives that reply to every request plans (and answers)."""
    options = ["--docs", str(CORPUS), "--tenant", tenant, "--agent", "--json"]
    if model_reply is None:
        result = run("ask", question, *options)
    else:
        server, url = fixed_server(200, answer_body(model_reply))
        try:
            result = run("ask", question, *options, "--llm-url", url, "--llm-model", "m")
        finally:
            server.shutdown()
    if traceback_in(result) or result.returncode != 0:
        return f"FAILED: raglab ask --agent: {result.stderr.strip()[-200:]}"
    return json.loads(result.stdout)


def _leaks(out: dict, tenant: str, *, answer: bool = True) -> list[str]:
    """What the run saw (or, with `answer`, said) that the asker (of `tenant`, no groups)
    may not read."""
    docs = {h["doc_id"] for h in out["retrieved"]}
    docs |= {h["doc_id"] for step in out["trace"] for h in step["retrieved"]}
    bad = sorted(d for d in docs if not d.startswith(f"{tenant}/") or d == SALARY_DOC)
    said = [f for f in SALARY_FIGURES if answer and f in out["answer"]]
    return bad + said


def _held(out: dict | str, tenant: str, *, answer: bool = True) -> str:
    if isinstance(out, str):
        return out
    leaks = _leaks(out, tenant, answer=answer)
    return f"FAILED: the agent reached {leaks}" if leaks else "held"


def model_reads_another_tenants_document(tmp: Path) -> str:
    """A model that asks, every turn, to read acme's salary bands for a globex user."""
    reply = json.dumps({"tool": "read", "doc_id": SALARY_DOC})
    return _held(_agent("What are the salary bands?", "globex", reply), "globex")


def model_reads_a_group_document_of_the_own_tenant(tmp: Path) -> str:
    """The same read for an acme user outside the hr group."""
    reply = json.dumps({"tool": "read", "doc_id": SALARY_DOC})
    return _held(_agent("What are the salary bands?", "acme", reply), "acme")


def model_writes_a_principal_into_its_reply(tmp: Path) -> str:
    """A reply that names the tenant and groups to read as: refused, nothing read."""
    reply = json.dumps({"tool": "read", "doc_id": SALARY_DOC, "tenant": "acme", "groups": ["hr"]})
    out = _agent("What are the salary bands?", "acme", reply)
    if isinstance(out, dict) and "refused" not in out["stop_reason"]:
        return f"FAILED: the reply was not refused (stop reason {out['stop_reason']!r})"
    return _held(out, "acme")


def model_searches_with_the_documents_own_words(tmp: Path) -> str:
    """A crafted query: the forbidden page's own rows, searched and searched by keyword."""
    query = "L4 Staff engineer team lead €84,000 €94,500 €105,000 salary band midpoint"
    reply = json.dumps({"tool": "keyword", "query": query, "k": 20})
    # the scripted model answers with its own reply, figures and all: only what the index
    # returned counts here
    return _held(_agent("Salary band of a staff engineer?", "acme", reply), "acme", answer=False)


def offline_planner_led_to_another_tenants_project(tmp: Path) -> str:
    """A globex user asks the chain question about acme's Project Juniper: the clause finds
    nothing of acme, so no refined search may carry an acme name."""
    question = "What is the street address of the office that Project Juniper moves support to?"
    out = _agent(question, "globex")
    if isinstance(out, dict) and any("Lisbon" in s["query"] for s in out["trace"]):
        return "FAILED: a refined query carried a name from acme's plan"
    return _held(out, "globex")


ATTACKS = [
    (
        "22a agent: a model reads another tenant's document by id",
        model_reads_another_tenants_document,
    ),
    (
        "22b agent: a model reads a group document by id",
        model_reads_a_group_document_of_the_own_tenant,
    ),
    (
        "22c agent: a model writes a principal into its reply",
        model_writes_a_principal_into_its_reply,
    ),
    (
        "22d agent: a model searches with the forbidden page's words",
        model_searches_with_the_documents_own_words,
    ),
    (
        "22e agent: the offline planner led to another tenant's project",
        offline_planner_led_to_another_tenants_project,
    ),
]
