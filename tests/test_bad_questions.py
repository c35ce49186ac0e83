"""Bad and strange questions, in-process: the Python API (graph/entrypoints/api.py), `ragate ask` (graph/entrypoints/cli.py)
and the compiled graph invoked directly. (The HTTP route has its own matrix in tests/test_http_api.py.)

Every question is either refused with a message naming the problem (a `QuestionError` from the
API, exit code 2 and one line on stderr from the CLI) and nothing is stored, or answered with a
well-formed result: the output contract, a valid verdict, citations among the sources, an answer in
the question's language where it can be told, JSON that encodes as UTF-8, and its request record
(and, unless BLOCK, its memory entry) stored. Refused: empty, whitespace, only invisible characters,
over 4,000 characters (100 kB), bytes, not a string, control characters (NUL, ESC, DEL, C1), lone
surrogates and undecodable command-line bytes. Answered: any script, mixed scripts, emoji, direction
marks and zero-width characters inside text (removed first: a zero-width space inside a word must
not make it another word), punctuation only, tabs and new lines.

The compiled graph is what LangGraph's own server (/runs) and Studio run, with no entry point's
checks in front of it: it must refuse clearly or answer well-formed, never fail with an obscure error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import template_regex

from graph.algorithms.text import strip_citations
from graph.entrypoints.api import Ragate
from graph.entrypoints.cli import main
from graph.governance.audit import REQUESTS, namespace
from graph.graph import compile_graph
from graph.output import to_output
from graph.prompts import phrases
from graph.providers.persistence import close_all, open_checkpointer, open_store
from graph.state import MAX_QUESTION_CHARS, QuestionError

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = {"request_id", "correlation_id", "answer", "direct_answer", "citations_used", "coverage_level", "suggestions", "verdict", "rag",
            "sub_queries", "decomposition", "sources", "memory", "timings_ms", "errors", "language"}
BIG = "Quanto cresceram as vendas de inverno? " * (100_000 // 39)  # ~100 kB

# name -> (question, what the refusal says). Refused by the API and the CLI.
REFUSED = {
    "empty": ("", "question is empty"),
    "whitespace only": (" \n\t  \r\n", "question is empty"),
    "zero-width only": ("\u200b\u200c\u200d\ufeff", "only invisible characters"),
    "direction marks only": ("\u200f\u200e\u202b\u202c", "only invisible characters"),
    "100 kB": (BIG, f"question is {len(BIG.strip())} characters; at most {MAX_QUESTION_CHARS}"),
    "NUL": ("Quanto cresceram\x00 as vendas?", "control characters"),
    "terminal escape": ("Quanto cresceram \x1b[31mas vendas\x1b[0m?", "control characters"),
    "bell and backspace": ("vendas\x07\x08?", "control characters"),
    "DEL": ("vendas\x7f de inverno?", "control characters"),
    "C1 control": ("vendas\x9b de inverno?", "control characters"),
    "lone surrogate": ("vendas \ud800 de inverno?", "not valid Unicode: a lone surrogate U+D800 at character 8"),
    "low surrogate": ("\udfff vendas?", "not valid Unicode: a lone surrogate U+DFFF at character 1"),
    "undecodable byte": ("caf\udce9 vendas?", "not valid UTF-8: byte 0xE9 at character 4"),
}
# Refused by the API only: a command line carries nothing but text.
REFUSED_API = {
    "bytes": (b"Quanto cresceram as vendas?", "question must be text (str), not bytes: decode it first"),
    "bytearray": (bytearray(b"\xff\xfe"), "question must be text (str), not bytearray"),
    "None": (None, "question is required"),
    "int": (42, "question must be a string, not int"),
    "list": (["vendas"], "question must be a string, not list"),
}
# name -> (question, its language, or None where it cannot be told). Answered.
ANSWERED = {
    "mixed script": ("Sales vendas продажи 销售 مبيعات बिक्री 2025?", None),
    "emoji only": ("📈🛍️❄️👍🏽", None),
    "emoji and text": ("Quanto cresceram as vendas 📈 de inverno ❄️ em 2025?", "pt"),
    "emoji ZWJ sequence": ("What is the return rate 👩‍👩‍👧 of online orders?", "en"),
    "RTL override around text": ("\u202eQuanto cresceram as vendas de inverno?\u202c", "pt"),
    "RTL marks in Arabic": ("\u200fما هي المبيعات في الشتاء؟\u200f", None),
    "LTR mark after English": ("What is Acme's online return rate?\u200e", "en"),
    "zero-width inside words": ("Quanto\u200b cresceram as ven\u00addas de in\u200cverno?", "pt"),
    "BOM first": ("\ufeffWhat is Acme's online return rate?", "en"),
    "punctuation only": ("?!...;:,—«»", None),
    "tabs and new lines": ("Quanto cresceram\n\tas vendas\r\nde inverno?", "pt"),
    "exactly the limit": (("Quanto cresceram as vendas de inverno? " * 200)[:MAX_QUESTION_CHARS], "pt"),
}


@pytest.fixture(autouse=True)
def _close_after():
    yield
    close_all()


@pytest.fixture
def rag(corpus, tmp_path):
    """The API on the session corpus, with its own SQLite store (the real one: it is what refuses
    to store a lone surrogate)."""
    return Ragate(corpus.context("acme"), store=open_store(tmp_path / "mem"),
                  checkpointer=open_checkpointer(tmp_path / "mem"))


def stored_records(store) -> list:
    return store.search(namespace(REQUESTS, "acme"), limit=1000)


def check_well_formed(out: dict, language: str | None, store) -> None:
    """The output contract of one answered question, and what it left in the store."""
    assert set(out) == CONTRACT, set(out) ^ CONTRACT
    assert out["verdict"]["final_decision"] in ("OK", "WARNING", "BLOCK")
    assert out["coverage_level"] in ("high", "medium", "low", "none")
    assert isinstance(out["answer"], str) and out["answer"].strip()
    assert set(out["citations_used"]) <= {s["docId"] for s in out["sources"]}
    assert out["errors"] == [], out["errors"]
    json.dumps(out, ensure_ascii=False).encode("utf-8")  # what every entry point sends back
    assert out["language"] in ("pt", "en")
    if language is not None:
        assert out["language"] == language
    # The answer speaks the detected language: it opens with its direct answer (cited, taken from the
    # documents) or one of that language's phrases, and none of the other language's phrases appears.
    first = out["answer"].split("\n", 1)[0]
    book = phrases(out["language"])
    other = phrases("en" if out["language"] == "pt" else "pt")
    if out["direct_answer"]:
        assert strip_citations(first).casefold().startswith(out["direct_answer"].casefold()), first
    else:
        assert first.startswith("- ") or any(isinstance(t, str) and template_regex(t).match(first)
                                             for t in book.values()), first
    for line in out["answer"].splitlines():
        assert not any(isinstance(t, str) and len(t) > 20 and template_regex(t).match(line)
                       for t in other.values() if t not in book.values()), line
    record = store.get(namespace(REQUESTS, "acme"), out["request_id"])
    assert record is not None and record.value["final_decision"] == out["verdict"]["final_decision"]
    remembered = store.get(namespace("memory", "acme"), out["request_id"]) is not None
    assert remembered == (out["verdict"]["final_decision"] != "BLOCK") == bool(out["memory"].get("saved"))


# --- the Python API -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*REFUSED, *REFUSED_API])
def test_api_refuses_with_a_message_naming_the_problem(rag, name):
    question, says = {**REFUSED, **REFUSED_API}[name]
    for call in (rag.ask, rag.invoke, lambda q, **kw: list(rag.stream(q, **kw))):
        with pytest.raises(QuestionError) as caught:
            call(question, correlation_id=f"refused-{uuid.uuid4().hex}")
        assert says in str(caught.value)
        assert isinstance(caught.value, ValueError)
        assert caught.value.status == (413 if name == "100 kB" else 422)
    assert stored_records(rag.store) == []  # nothing ran: no record, no memory


@pytest.mark.parametrize("name", ANSWERED)
def test_api_answers_any_other_text_well_formed(rag, name):
    question, language = ANSWERED[name]
    check_well_formed(rag.ask(question), language, rag.store)


def test_invisible_formatting_inside_words_finds_what_the_plain_question_finds(rag):
    """A zero-width space or a soft hyphen pasted inside "vendas" used to make it another word: the
    intent rule (sales) missed, and so did the search (coverage none instead of medium)."""
    plain = rag.ask("Quanto cresceram as vendas de inverno em 2025?")
    assert plain["coverage_level"] != "none" and plain["rag"]["intent"] == "sales"
    for pasted in ("Quanto\u200b cresceram as ven\u200bdas de in\u00adverno em 2025?",
                   "\ufeff\u202aQuanto cresceram as vendas de inverno em 2025?\u202c",
                   "Quanto cresceram as ven\u2060das de inverno em 2025?\u200f"):
        out = rag.ask(pasted)
        assert out["rag"]["question"] == plain["rag"]["question"]
        assert (out["rag"]["intent"], out["coverage_level"], out["citations_used"]) == \
            (plain["rag"]["intent"], plain["coverage_level"], plain["citations_used"])
        assert [s["docId"] for s in out["sources"]] == [s["docId"] for s in plain["sources"]]


# --- ragate ask -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", REFUSED)
def test_cli_refuses_with_exit_code_2_and_one_line(corpus, capsys, name):
    question, says = REFUSED[name]
    rc = main(["ask", question, "--home", str(corpus.home), "--tenant", "acme", "--json"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("ragate ask: ") and says in err


@pytest.mark.parametrize("name", ["mixed script", "emoji only", "RTL marks in Arabic", "zero-width inside words",
                                  "punctuation only", "tabs and new lines"])
def test_cli_answers_well_formed(corpus, capsys, name):
    question, language = ANSWERED[name]
    rc = main(["ask", question, "--home", str(corpus.home), "--tenant", "acme", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    check_well_formed(json.loads(out), language, open_store(corpus.home))


def test_cli_refuses_bytes_that_are_not_utf8_from_a_real_command_line(tmp_path):
    """Bytes that are not UTF-8 in argv reach Python as surrogate escapes: refused before anything
    is opened (the data folder stays empty)."""
    home = tmp_path / "home"
    proc = subprocess.run([sys.executable, "-m", "graph.entrypoints.cli", "ask", b"Quanto custa o caf\xe9?", "--tenant", "acme",
                           "--home", str(home)], cwd=ROOT, capture_output=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONUTF8": "1", "LC_ALL": "C.UTF-8"})
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, err
    position = len("Quanto custa o caf") + 1
    assert err == f"ragate ask: question is not valid UTF-8: byte 0xE9 at character {position}; send UTF-8 text\n"
    assert proc.stdout == b"" and not home.exists()


# --- the compiled graph, invoked directly ----------------------------------------------------------


@pytest.fixture
def graph_run(corpus, tmp_path):
    store = open_store(tmp_path / "graph-mem")
    graph = compile_graph(store=store)

    def run(question):
        cid = f"g-{uuid.uuid4().hex}"
        return graph.invoke({"question": question, "correlation_id": cid}, context=corpus.context("acme")), store

    return run


def test_the_graph_answers_an_empty_question_and_says_retrieval_was_skipped(graph_run):
    """What LangGraph's server does with {"question": ""}: a well-formed answer that says no
    document was searched because the question is empty, in the default language."""
    for question in ("", "   ", None):
        state, store = graph_run(question)
        out = to_output(state)
        check_well_formed(out, "en", store)
        assert out["rag"]["enabled"] is False and out["rag"]["disabled_reason"] == "empty_question"
        assert out["answer"].startswith(phrases("en")["retrieval_disabled"].split("{")[0])
        assert out["sources"] == [] and out["citations_used"] == []


def _graph_cases():
    for name in [n for n in REFUSED if n not in ("empty", "whitespace only")] + list(REFUSED_API) + list(ANSWERED):
        yield pytest.param(name, id=name)


@pytest.mark.parametrize("name", list(_graph_cases()))
def test_the_graph_refuses_clearly_or_answers_well_formed(graph_run, name):
    question, expected = {**REFUSED, **REFUSED_API, **ANSWERED}[name]
    try:
        state, store = graph_run(question)
    except QuestionError as exc:  # a clear refusal: route_gate applies check_question
        assert name not in ANSWERED, f"{name!r} is a question: {exc}"
        assert expected in str(exc)
        return
    language = expected if name in ANSWERED else None
    check_well_formed(to_output(state), language, store)
