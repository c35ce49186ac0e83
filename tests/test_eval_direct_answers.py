"""`ragate eval answers`: the direct-answer metrics (MultiHop-RAG and SQuAD format) on hand-computed
cases, and one end-to-end run of the whole graph over a tiny Portuguese SQuAD-format dataset written
here. Nothing here reads ../shared or the network."""

from __future__ import annotations

import json
import statistics

import pytest

from graph.evaluation import answers
from graph.evaluation.answers import (
    answer_words,
    check_dataset,
    cited_docs,
    direct_correct,
    direct_text,
    first_sentence,
    gold_answers,
    has_gold_tokens,
    normalize_squad,
    score_answer,
    score_squad,
    squad_f1,
    squad_scores,
    summarize,
    summarize_squad,
    yes_no,
    yes_no_balanced_accuracy,
)
from graph.evaluation.datasets import EvalQuery
from graph.evaluation.runner import EvalError


def with_direct_answers(monkeypatch, directs: dict[str, str | None]) -> None:
    """The real graph runs; its final state's `direct_answer` is replaced by the one given here for
    the question (a question not listed here: the key is removed, as from a composer without it), so
    the direct metrics of an end-to-end run are known in advance."""
    real = answers.compile_graph

    class Graph:
        def __init__(self, graph):
            self.graph = graph

        def invoke(self, inputs, **kwargs):
            state = dict(self.graph.invoke(inputs, **kwargs))
            state.pop("direct_answer", None)
            if inputs["question"] in directs:
                state["direct_answer"] = directs[inputs["question"]]
            return state

    monkeypatch.setattr(answers, "compile_graph", lambda **kw: Graph(real(**kw)))


# --- shared by both datasets ------------------------------------------------------------------------


def test_a_direct_answer_is_scored_without_its_markers_and_nothing_is_an_abstention():
    assert direct_text("Campo Grande [0-0].") == "Campo Grande."
    assert direct_text("Sim, em 1727 [1-0, 2-0]") == "Sim, em 1727"
    assert direct_text(None) == direct_text("") == direct_text("  [0-0] ") == ""


def test_answer_words_count_words_not_markers_or_bullets():
    assert answer_words("- Engineers cheered [a-1].\n- Sam Bankman-Fried won in 2023 [b-2].") == 7
    assert answer_words("A onça-pintada vive no Pantanal [2-0, 3-0].") == 5
    assert answer_words("") == 0


def test_gold_answers_are_the_non_blank_strings():
    assert gold_answers(EvalQuery("q", "?", None, answer=["Campo Grande", " ", None, "em Campo Grande"])) == [
        "Campo Grande", "em Campo Grande"]
    assert gold_answers(EvalQuery("q", "?", None, answer="Yes")) == ["Yes"]
    assert gold_answers(EvalQuery("q", "?", None, answer=None)) == []
    assert gold_answers(EvalQuery("q", "?", None, answer=[])) == []


def test_beir_is_refused_in_one_line_and_squad_accepted():
    check_dataset("squad")
    check_dataset("multihop-rag")
    with pytest.raises(EvalError) as err:
        check_dataset("beir")
    assert "\n" not in str(err.value) and str(err.value).startswith("--dataset beir: answers need gold answers")


# --- MultiHop-RAG ---------------------------------------------------------------------------------


def test_direct_correct_is_the_upstream_rule_on_the_direct_answer_alone():
    assert direct_correct("Orbital Dynamics.", "Orbital Dynamics", null=False, coverage="low")  # "orbital" shared
    assert not direct_correct("Yes.", "Yes", null=False, coverage="high")  # upstream keeps the period: "yes." ≠ "yes"
    assert direct_correct("yes", "Yes", null=False, coverage="high")
    assert not direct_correct("", "Orbital Dynamics", null=False, coverage="none")  # an abstention is wrong
    # A null query: right only with coverage none AND no direct answer.
    assert direct_correct("", "Insufficient information.", null=True, coverage="none")
    assert not direct_correct("Insufficient information.", "Insufficient information.", null=True, coverage="none")
    assert not direct_correct("", "Insufficient information.", null=True, coverage="low")


def test_yes_no_reads_the_first_word_in_english_and_portuguese():
    assert [yes_no(t) for t in ("Yes, it did.", "NÃO.", "Sim", '"No" — it was later.', "não, em 1727")] == [
        "yes", "no", "yes", "no", "no"]
    assert [yes_no(t) for t in ("Nope", "Yesterday", "Not really", "It was yes", "")] == [None] * 5


def _mh(gold, direct, coverage="low", type_="comparison_query", correct=False, cited=(), words=10, verdict="OK",
        ms=10.0):
    """A MultiHop-RAG per-query row as run_answers writes it (the fields summarize reads)."""
    return {"type": type_, "gold_answer": gold, "direct_answer": direct, "coverage": coverage, "correct": correct,
            "gold_in_answer": correct, "cited_chunks": [{"has_fact": h} for h in cited], "answer_words": words,
            "verdict": verdict, "latency_ms": ms,
            "direct_correct": direct_correct(direct_text(direct), gold, null=type_ == "null_query", coverage=coverage)}


def test_yes_no_balanced_accuracy_is_the_mean_recall_of_the_two_classes():
    rows = [_mh("Yes", "Yes [a]."), _mh("Yes", "No."), _mh("Yes", None), _mh("No.", "no, it did not"),
            _mh("Sam Bankman-Fried", "No")]  # an entity gold counts in neither class
    assert yes_no_balanced_accuracy(rows) == pytest.approx((1 / 3 + 1) / 2, abs=1e-4)
    always_no = [_mh("Yes", "No"), _mh("Yes", "No"), _mh("Yes", "No"), _mh("no", "No")]
    assert yes_no_balanced_accuracy(always_no) == 0.5  # the plain accuracy would be 0.25; with 3 "no" golds, 0.75
    abstaining = [_mh("Yes", None), _mh("No", None)]
    assert yes_no_balanced_accuracy(abstaining) == 0.0  # an abstention is wrong for both classes
    assert yes_no_balanced_accuracy(rows[:3]) is None  # only gold "yes"
    assert yes_no_balanced_accuracy([_mh("No", "No")]) is None  # only gold "no"
    assert yes_no_balanced_accuracy([]) is None


def test_summarize_direct_metrics_null_and_answerable_coverage_and_median_words():
    rows = [
        _mh("Orbital Dynamics", "Orbital Dynamics [a].", words=12),        # given, right
        _mh("Nevada", "Arizona [b].", words=20),                          # given, wrong
        _mh("Yes", None, coverage="none", words=30),                      # abstained (and coverage none)
        _mh("No", "No [c]", words=8),                                      # given, right ("No." would not be)
        _mh("Insufficient information.", None, coverage="none", type_="null_query", words=25),  # right
        _mh("Insufficient information.", "Quuxly [d].", coverage="none", type_="null_query", words=9),  # wrong
    ]
    m = summarize(rows)
    assert m["direct_accuracy"] == 0.5                       # 3 of 6
    assert m["direct_given"] == 0.75                         # 3 of the 4 answerable
    assert m["direct_precision"] == pytest.approx(0.6667)    # 2 of the 3 given
    assert m["null_to_none"] == 1.0 and m["answerable_to_none"] == 0.25
    assert m["yes_no_balanced_accuracy"] == 0.5              # yes: 0 of 1, no: 1 of 1
    assert m["median_answer_words"] == 16.0                  # of 8, 9, 12, 20, 25, 30
    assert m["coverage_none"] == 0.5 and m["n"] == 6
    null_only = summarize(rows[4:])
    assert null_only["direct_given"] is None and null_only["direct_precision"] is None
    assert null_only["answerable_to_none"] is None and null_only["null_to_none"] == 1.0
    assert null_only["direct_accuracy"] == 0.5


def test_score_answer_reads_a_missing_direct_answer_as_an_abstention():
    q = EvalQuery("q1", "Which company?", "inference_query", gold={"facts": ["x"], "docs": {"a": 1}},
                  answer="Orbital Dynamics")
    state = {"answer": "- Orbital Dynamics landed [a].", "coverage_level": "low", "reranked": [],
             "verdict": {"final_decision": "OK"}}
    row = score_answer(q, state)
    assert row["direct_answer"] is None and row["direct_correct"] is False and row["correct"] is True
    assert row["answer_words"] == 3
    row = score_answer(q, {**state, "direct_answer": "Orbital Dynamics [a]."})
    assert row["direct_answer"] == "Orbital Dynamics [a]." and row["direct_correct"] is True
    assert score_answer(q, {**state, "direct_answer": "[a]"})["direct_answer"] is None
    null = EvalQuery("q2", "Quuxly?", "null_query", answer="Insufficient information.")
    none_state = {"answer": "I found nothing.", "coverage_level": "none", "direct_answer": None}
    assert score_answer(null, none_state)["direct_correct"] is True
    assert score_answer(null, {**none_state, "coverage_level": "low"})["direct_correct"] is False


# --- SQuAD format -----------------------------------------------------------------------------------


def test_squad_normalisation_is_the_official_one_and_keeps_accents():
    assert normalize_squad("A Onça-Pintada, no Pantanal!") == "onçapintada no pantanal"  # "a" is an article
    assert normalize_squad("  The  answer:\tNÃO é   à toa. ") == "answer não é à toa"
    assert normalize_squad("São Paulo") != normalize_squad("Sao Paulo")
    assert normalize_squad("“Campo Grande”") == "“campo grande”"  # official: ASCII punctuation only


def test_squad_f1_and_exact_match_on_portuguese_answers():
    assert squad_f1("em Campo Grande, no estado", "Campo Grande") == pytest.approx(2 * 0.4 * 1 / 1.4)
    assert squad_f1("São Paulo e região", "são paulo") == pytest.approx(2 / 3)
    assert squad_f1("Sao Paulo", "São Paulo") == pytest.approx(0.5)   # the accent makes "sao" another token
    assert squad_f1("mais mais de 500", "mais de 500") == pytest.approx(2 * 0.75 / 1.75)  # counted with multiplicity
    assert squad_f1("nove", "cem") == 0.0 and squad_f1("", "cem") == 0.0
    golds = ["Campo Grande", "em Campo Grande"]
    assert squad_scores("Em Campo Grande.", golds) == (1.0, 1.0)      # the best gold
    em, f1 = squad_scores("sediada em Campo Grande", golds)
    assert em == 0.0 and f1 == pytest.approx(2 * 0.75 / 1.75)
    assert squad_scores("", golds) == (0.0, 0.0) and squad_scores("Campo Grande", []) == (0.0, 0.0)


def test_first_sentence_has_gold_as_whole_normalised_tokens():
    answer = "Campo Grande [0-0].\n\n- A UFMS mantém campi em nove cidades [0-0]."
    assert first_sentence(answer) == "Campo Grande."
    assert has_gold_tokens(first_sentence(answer), ["em Campo Grande", "Campo Grande"])
    assert not has_gold_tokens(first_sentence(answer), ["nove"]) and has_gold_tokens(answer, ["nove"])
    prose = "A UFMS fica em Campo Grande [0-0]. Tem campi em nove cidades [0-0]."
    assert first_sentence(prose) == "A UFMS fica em Campo Grande."
    assert has_gold_tokens("A onça-pintada é o maior felino [2-0].", ["a onça-pintada"])
    assert not has_gold_tokens("Fica ao lado do cemitério.", ["cem"])   # tokens, not substrings
    assert not has_gold_tokens("Campo Grande", ["Grande Campo"]) and not has_gold_tokens("", ["cem"])
    assert first_sentence("") == ""


def test_cited_docs_are_each_counted_once_against_the_gold_paragraph():
    answer = "Palheta [1-0].\n\n- O café chegou em 1727 [1-0, 0-0].\n- Cresceu no vale [2-0]."
    assert cited_docs(answer, {"1-0": 1}) == [{"docId": "1-0", "gold": True}, {"docId": "0-0", "gold": False},
                                              {"docId": "2-0", "gold": False}]
    assert cited_docs("Nada citado.", {"1-0": 1}) == []


def test_score_squad_and_summarize_squad():
    q = EvalQuery("q1", "Onde é sediada a UFMS?", None, gold={"docs": {"0-0": 1}},
                  answer=["Campo Grande", "em Campo Grande"])
    state = {"answer": "Em Campo Grande [0-0].\n\n- A UFMS é sediada em Campo Grande [0-0].", "coverage_level": "low",
             "direct_answer": "Em Campo Grande [0-0].", "verdict": {"final_decision": "WARNING"}}
    row = score_squad(q, state)
    assert (row["direct_em"], row["direct_f1"], row["first_sentence_has_gold"]) == (1.0, 1.0, True)
    assert row["gold_docs"] == ["0-0"] and row["cited_docs"] == [{"docId": "0-0", "gold": True}]
    assert row["answer_words"] == 10 and row["verdict"] == "WARNING"
    abstained = score_squad(q, {"answer": "Nada encontrado [1-0].", "coverage_level": "none"})
    assert abstained["direct_answer"] is None and (abstained["direct_em"], abstained["direct_f1"]) == (0.0, 0.0)
    assert abstained["first_sentence_has_gold"] is False
    no_gold = score_squad(EvalQuery("q2", "?", None, answer=["x"]), {"answer": "x [0-0].", "coverage_level": "low"})
    rows = [{**r, "latency_ms": ms} for r, ms in ((row, 10.0), (abstained, 30.0), (no_gold, 20.0))]
    m = summarize_squad(rows)
    assert m["n"] == 3 and m["direct_em"] == pytest.approx(0.3333) and m["direct_f1"] == pytest.approx(0.3333)
    assert m["first_sentence_has_gold"] == pytest.approx(0.6667)   # "x." holds the gold "x"
    assert m["direct_given"] == pytest.approx(0.3333) and m["answerable_to_none"] == pytest.approx(0.3333)
    # Citations of the question without a gold paragraph are not judged: 1 of 2 cited documents.
    assert m["citation_precision"] == 0.5 and m["cited_docs"] == 2 and m["queries_citing"] == 2
    assert m["median_answer_words"] == 2.0                         # of 10, 2, 1
    assert m["verdicts"] == {"OK": 0, "WARNING": 1, "BLOCK": 0} and m["latency_ms"]["p50"] == 20.0


# --- end to end, on a SQuAD-format file written here -------------------------------------------------

SQUAD = {"version": "1.0", "data": [
    {"title": "UFMS", "paragraphs": [{
        "context": ("A Universidade Federal de Mato Grosso do Sul (UFMS) é uma instituição de ensino superior pública "
                    "federal brasileira, sediada em Campo Grande. A UFMS mantém campi em nove cidades do estado."),
        "qas": [{"id": "q1", "question": "Onde é sediada a UFMS?",
                 "answers": [{"text": "Campo Grande", "answer_start": 126},
                             {"text": "em Campo Grande", "answer_start": 123}]},
                {"id": "q2", "question": "Em quantas cidades a UFMS mantém campi?",
                 "answers": [{"text": "nove", "answer_start": 160}, {"text": "nove cidades", "answer_start": 160}]}]}]},
    {"title": "Café", "paragraphs": [{
        "context": ("O café chegou ao Brasil em 1727, trazido por Francisco de Melo Palheta. A produção cresceu no "
                    "vale do Paraíba durante o século XIX."),
        "qas": [{"id": "q3", "question": "Quem trouxe o café ao Brasil?",
                 "answers": [{"text": "Francisco de Melo Palheta", "answer_start": 45}]}]}]},
    {"title": "Pantanal", "paragraphs": [{
        "context": ("O Pantanal é a maior planície alagável do mundo. A onça-pintada é o maior felino das Américas e "
                    "vive no Pantanal."),
        "qas": [{"id": "q4", "question": "Qual é o maior felino das Américas?",
                 "answers": [{"text": "a onça-pintada", "answer_start": 49},
                             {"text": "onça-pintada", "answer_start": 51}]},
                {"id": "q5", "question": "Sem resposta?", "answers": []}]}]},  # no gold answer: not asked
]}
DIRECT = {"Onde é sediada a UFMS?": "Em Campo Grande [0-0].",            # EM 1, F1 1
          "Em quantas cidades a UFMS mantém campi?": "Nove cidades do estado [0-0].",  # EM 0, F1 2/3
          "Qual é o maior felino das Américas?": None}                  # abstains; q3: no key at all


def test_eval_answers_squad_end_to_end(tmp_path, capsys, monkeypatch):
    from graph.entrypoints.cli import main

    data = tmp_path / "faquad"
    data.mkdir()
    (data / "tiny.json").write_text(json.dumps(SQUAD, ensure_ascii=False), encoding="utf-8")
    with_direct_answers(monkeypatch, DIRECT)
    out = tmp_path / "out"
    code = main(["eval", "answers", "--dataset", "squad", "--corpus", str(data), "--home", str(tmp_path / "home"),
                 "--out", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err

    res = json.loads((out / "answers.json").read_text(encoding="utf-8"))
    assert res["dataset"] == "squad" and res["n_queries"] == 4 and res["settings"]["queries_read"] == 5
    assert res["ingest"]["documents"] == 3 and res["per_type"] == {}
    assert "SQuAD v1.1" in res["settings"]["accuracy_rule"] and "null_queries" not in res
    rows = [json.loads(line) for line in (out / "answers_per_query.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["q1", "q2", "q3", "q4"]
    assert rows[0]["gold_answer"] == ["Campo Grande", "em Campo Grande"]
    assert [r["direct_answer"] for r in rows] == ["Em Campo Grande [0-0].", "Nove cidades do estado [0-0].", None, None]
    assert [r["direct_em"] for r in rows] == [1.0, 0.0, 0.0, 0.0]
    assert [r["direct_f1"] for r in rows] == [1.0, 0.6667, 0.0, 0.0]
    # Every question is about one paragraph that nothing else mentions: it is found and the only one cited.
    for r, gold in zip(rows, ["0-0", "0-0", "1-0", "2-0"]):
        assert r["gold_docs"] == [gold] and r["coverage"] != "none", r
        assert r["cited_docs"] and all(c["gold"] for c in r["cited_docs"]), r
        assert r["first_sentence_has_gold"] == has_gold_tokens(first_sentence(r["answer"]), r["gold_answer"])
        assert r["answer_words"] == answer_words(r["answer"]) > 0

    m = res["metrics"]
    assert (m["n"], m["direct_em"], m["direct_f1"], m["direct_given"]) == (4, 0.25, 0.4167, 0.5)
    assert m["answerable_to_none"] == 0.0 and m["citation_precision"] == 1.0 and m["cited_docs"] >= 4
    assert m["first_sentence_has_gold"] == sum(r["first_sentence_has_gold"] for r in rows) / 4
    assert m["median_answer_words"] == statistics.median(r["answer_words"] for r in rows)
    assert sum(m["verdicts"].values()) == 4 and m["latency_ms"]["n"] == 4
    assert {"retrieve", "compose", "judge", "total"} <= set(res["latency_ms"])

    printed = captured.out
    assert "## Answer evaluation: squad (whole graph)" in printed
    assert "| all | 4 | 0.250 | 0.417 |" in printed and "direct EM" in printed and "### Latency per node" in printed
    assert not list(tmp_path.rglob("memory.sqlite"))
