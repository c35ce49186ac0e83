"""The judge's answer relevance (graph/algorithms/answer_relevance.py, through judging.judge_answer): a grounded
answer that does not address its question is held at WARNING with the part it misses named; a relevant one stays
OK; the thresholds come from the policy's `judge.relevance`; `ragate eval groundedness` reports relevance."""

from __future__ import annotations

import copy
import json

import pytest

from graph.algorithms.answer_relevance import answer_relevance
from graph.algorithms.groundedness import Source
from graph.algorithms.judging import deterministic_verdict, judge_answer
from graph.entrypoints.cli import main as cli_main
from graph.evaluation.groundedness import GroundednessInputError, load_items, run_groundedness
from graph.policy import PolicyError, load_policy, validate_policy
from graph.prompts import phrase
from graph.providers.relevance import judge_scorer

EN = [Source("d1", "Acme Robotics reported revenue of $3.2 billion in 2023, up 12%. Acme Robotics reported strong "
                   "revenue in 2023. The growth came from Europe and Japan.", "d1#0"),
      Source("d2", "Acme Robotics opened a new office in Austin. The company has 4,500 employees in Germany and "
                   "Texas.", "d2#0")]
PT = [Source("p1", "A Natura registrou receita de R$ 7,2 bilhões em 2024. A Natura registrou receita recorde em "
                   "2024. O crescimento veio das vendas online.", "p1#0"),
      Source("p2", "A Natura abriu uma nova fábrica em Cajamar. A empresa tem 6.000 funcionários no Brasil.", "p2#0")]
CASES = {
    "en": {"sources": EN, "question": "How much revenue did Acme Robotics report in 2023?",
           "relevant": "Acme Robotics reported revenue of $3.2 billion in 2023, up 12% [d1].",
           "without_value": "Acme Robotics reported strong revenue in 2023 [d1].",
           "off_topic": "Acme Robotics opened a new office in Austin [d2].",
           "two_parts": "How much revenue did Acme Robotics report in 2023 and how many employees does it have "
                        "in Germany?",
           "other_part": "how many employees does it have in Germany",
           "second": "The company has 4,500 employees in Germany and Texas [d2]."},
    "pt": {"sources": PT, "question": "Qual foi a receita da Natura em 2024?",
           "relevant": "A Natura registrou receita de R$ 7,2 bilhões em 2024 [p1].",
           "without_value": "A Natura registrou receita recorde em 2024 [p1].",
           "off_topic": "A Natura abriu uma nova fábrica em Cajamar [p2].",
           "two_parts": "Qual foi a receita da Natura em 2024 e quantos funcionários a empresa tem no Brasil?",
           "other_part": "quantos funcionários a empresa tem no Brasil",
           "second": "A empresa tem 6.000 funcionários no Brasil [p2]."},
}
LANGUAGES = sorted(CASES)


@pytest.fixture(scope="module")
def policy():
    return load_policy()


def policy_with(**relevance):
    """The default policy with some `judge.relevance` settings changed."""
    raw = copy.deepcopy(load_policy().raw)
    raw["judge"].setdefault("relevance", {}).update(relevance)
    return validate_policy(raw, "policy.yaml")


def judge(policy, language, answer, question=None, **kw):
    case = CASES[language]
    return judge_answer(answer, case["sources"], language=language, coverage="medium", policy=policy,
                        question=case["question"] if question is None else question, **kw)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_relevant_grounded_answer_stays_ok(policy, language):
    v = judge(policy, language, CASES[language]["relevant"])
    assert v["final_decision"] == "OK", v["reasoning"]
    assert "addresses the question" in v["reasoning"]["quality"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_grounded_off_topic_answer_is_a_warning_naming_what_it_misses(policy, language):
    case = CASES[language]
    v = judge(policy, language, case["off_topic"])
    assert v["scores"]["groundedness"] >= policy.judge.thresholds.ok  # every claim is supported...
    assert v["final_decision"] == "WARNING"  # ...but it does not answer
    quality = v["reasoning"]["quality"]
    assert "off-topic" in quality and f"«{case['question'].rstrip('?')}»" in quality, quality
    # The source that speaks of the question is named by id.
    assert f"[{case['sources'][0].doc_id}]" in quality
    # Without the question (the eval before relevance, an answer file without one) nothing is judged.
    assert judge(policy, language, case["off_topic"], question="")["final_decision"] == "OK"


@pytest.mark.parametrize("language", LANGUAGES)
def test_relevance_alone_never_blocks_a_grounded_answer(policy, language):
    # A floor no answer reaches: relevance at its lowest still leaves quality in the WARNING band.
    v = judge(policy_with(answer_floor=1.0, multi_part_floor=1.0), language, CASES[language]["off_topic"])
    assert v["final_decision"] == "WARNING"
    assert policy.judge.thresholds.block <= v["scores"]["quality"] < policy.judge.thresholds.ok


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_two_part_question_answered_on_one_part_names_the_other(policy, language):
    case = CASES[language]
    one = judge(policy, language, case["relevant"], question=case["two_parts"])
    both = judge(policy, language, f"{case['relevant']} {case['second']}", question=case["two_parts"])
    assert f"not addressed: «{case['other_part']}»" in one["reasoning"]["utility"], one["reasoning"]
    assert "not addressed" not in both["reasoning"]["utility"]
    assert one["scores"]["utility"] < both["scores"]["utility"]
    relevance = answer_relevance(case["two_parts"], case["relevant"], case["sources"], language, policy)
    assert [p.text for p in relevance.missing] == [case["other_part"]] and relevance.parts_covered == 0.5


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_second_question_passed_over_in_silence_is_a_warning(policy, language):
    # Both parts open with a question word: the question asks two things, and an answer on one of them that
    # does not say it found nothing on the other is at most WARNING; one that says so is judged as before.
    case = CASES[language]
    silent = judge(policy, language, case["relevant"], question=case["two_parts"])
    assert silent["final_decision"] == "WARNING", silent["reasoning"]
    assert (f"not addressed: «{case['other_part']}», passed over in silence"
            in silent["reasoning"]["utility"]), silent["reasoning"]
    missing = phrase(language, "missing_part", parts=f"«{case['other_part']}»")  # the composer's own words
    said = judge(policy, language, f"{case['relevant']}\n\n{missing}", question=case["two_parts"])
    assert f"not addressed: «{case['other_part']}»" in said["reasoning"]["utility"]
    assert "passed over in silence" not in said["reasoning"]["utility"]
    assert said["scores"]["utility"] > silent["scores"]["utility"]


def test_clauses_of_one_question_are_not_second_questions(policy):
    # "Which company, reported by …, and known for …": one thing asked, described by clauses; an answer that
    # paraphrases a clause's words is left to the relevance, not held to each clause.
    question = ("Which company reported revenue of $3.2 billion in 2023, opened a new office in Austin and has "
                "employees in Germany?")
    verdict = judge(policy, "en", CASES["en"]["relevant"], question=question)
    assert "passed over in silence" not in verdict["reasoning"]["utility"], verdict["reasoning"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_how_much_question_answered_without_a_number_is_less_direct(policy, language):
    case = CASES[language]
    direct = answer_relevance(case["question"], case["relevant"], case["sources"], language, policy)
    indirect = answer_relevance(case["question"], case["without_value"], case["sources"], language, policy)
    assert direct.kind == indirect.kind == "how_much"
    assert direct.direct and not indirect.direct
    assert indirect.relevance < direct.relevance
    quality = judge(policy, language, case["without_value"])["reasoning"]["quality"]
    assert "does not open with the value asked for" in quality


def test_a_yes_no_question_is_direct_when_the_answer_opens_with_yes_or_no(policy):
    question = "Did Acme Robotics report revenue growth in 2023?"
    opens = answer_relevance(question, "Yes.\n\nAcme Robotics reported revenue of $3.2 billion in 2023, up 12% [d1].",
                             EN, "en", policy)
    plain = answer_relevance(question, CASES["en"]["relevant"], EN, "en", policy)
    assert opens.kind == "yes_no" and opens.direct and not plain.direct
    sim = answer_relevance("A Natura registrou receita em 2024?", f"Sim.\n\n{CASES['pt']['relevant']}", PT, "pt",
                           policy)
    assert sim.direct


def test_the_composers_direct_answer_must_be_in_the_opening(policy):
    state = {"answer": CASES["pt"]["relevant"], "reranked": [{"docId": s.doc_id, "content": s.text, "id": s.chunk_id}
                                                            for s in PT],
             "language": "pt", "coverage_level": "medium", "question": CASES["pt"]["question"]}
    def quality(**changes):
        return deterministic_verdict({**state, **changes}, policy)["reasoning"]["quality"]

    assert "does not open" not in quality(direct_answer="R$ 7,2 bilhões")
    assert "does not open with the value" in quality(direct_answer="R$ 9 bilhões")
    # A question with no value, date or name test ("qual empresa") still checks the direct answer is there.
    assert "does not open with the direct answer" in quality(question="Qual empresa abriu uma fábrica?",
                                                             direct_answer="Cajamar")


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_thresholds_are_the_policys(policy, language):
    case = CASES[language]
    assert judge(policy_with(answer_floor=0.0), language, case["off_topic"])["final_decision"] == "OK"
    assert judge(policy_with(answer_floor=1.0, indirect_penalty=0.5), language,
                 case["without_value"])["final_decision"] == "WARNING"
    # The part floor decides what counts as missing.
    relaxed = judge(policy_with(part_floor=0.0), language, case["relevant"], question=case["two_parts"])
    assert "not addressed" not in relaxed["reasoning"]["utility"]


def test_repeated_claims_lower_quality(policy):
    once = judge(policy, "en", CASES["en"]["relevant"])
    twice = judge(policy, "en", CASES["en"]["relevant"] + " In 2023, Acme Robotics reported revenue of $3.2 billion "
                                                           "[d1].")
    assert twice["scores"]["quality"] < once["scores"]["quality"]
    assert "repeat an earlier one" in twice["reasoning"]["quality"]


def test_a_relevance_model_is_blended_in_when_given(policy):
    class Doubtful:
        name, reads_windows = "doubtful", False

        def score(self, question, passages):
            return [0.0] * len(passages)

    case = CASES["en"]
    alone = answer_relevance(case["question"], case["relevant"], EN, "en", policy)
    doubted = answer_relevance(case["question"], case["relevant"], EN, "en", policy_with(model_weight=0.5),
                               scorer=Doubtful())
    assert alone.model is None and doubted.model == 0.0
    assert doubted.relevance == pytest.approx(alone.relevance * 0.5, abs=1e-3)
    # The cross-encoder is only asked for when the policy turns it on, and only for English.
    assert judge_scorer(policy, "en") is None
    assert judge_scorer(policy_with(cross_encoder=True), "pt") is None


@pytest.mark.parametrize("key, value, message", [
    ("answer_floor", 1.5, "judge.relevance.answer_floor must be between 0 and 1, not 1.5"),
    ("multi_part_floor", -0.1, "judge.relevance.multi_part_floor must be between 0 and 1"),
    ("passage_weight", "high", "judge.relevance.passage_weight must be a number"),
    ("cross_encoder", "yes", "judge.relevance.cross_encoder must be true or false"),
    ("floor", 0.5, "judge.relevance.floor is not a setting of judge.relevance"),
])
def test_bad_relevance_settings_are_refused_by_name(key, value, message):
    raw = copy.deepcopy(load_policy().raw)
    raw["judge"].setdefault("relevance", {})[key] = value
    with pytest.raises(PolicyError, match=message.replace(".", r"\.")):
        validate_policy(raw, "policy.yaml")


# --- ragate eval groundedness ----------------------------------------------------------------


def items(language):
    case = CASES[language]
    context = [{"doc_id": s.doc_id, "text": s.text} for s in case["sources"]]
    return [{"id": f"{language}-r", "question": case["question"], "context": context, "answer": case["relevant"],
             "label": 1, "relevant": 1, "language": language},
            {"id": f"{language}-i", "question": case["question"], "context": context, "answer": case["off_topic"],
             "label": 1, "relevant": 0, "language": language}]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_eval_reports_relevance_overall_and_per_language(tmp_path, capsys):
    src = write_jsonl(tmp_path / "rel.jsonl", items("en") + items("pt"))
    assert cli_main(["eval", "groundedness", "--input", str(src), "--out", str(tmp_path / "out"), "--quiet",
                     "--home", str(tmp_path / "home")]) == 0
    printed = capsys.readouterr().out
    assert "en-i\tfaithful, irrelevant\tWARNING" in printed and "off-topic" in printed
    assert "| en | 1 | 1.000 | 1 | 1.000 |" in printed  # irrelevant, flagged, relevant, OK
    out = json.loads((tmp_path / "out" / "results.json").read_text())
    m = out["metrics"]
    assert (m["n_relevant"], m["n_irrelevant"], m["irrelevant_flagged"], m["relevant_ok"]) == (2, 2, 1.0, 1.0)
    assert out["by_language"]["pt"]["irrelevant_flagged"] == 1.0
    assert m["faithful_passed"] == 1.0  # WARNING is not BLOCK


def test_eval_counts_an_irrelevant_answer_passed_as_ok(tmp_path):
    rows = items("en")
    rows[0] = {**rows[0], "relevant": 0}  # an OK answer labelled irrelevant: not flagged
    out = run_groundedness(load_items(write_jsonl(tmp_path / "s.jsonl", rows)), load_policy())
    assert out["metrics"]["irrelevant_flagged"] == 0.5 and out["metrics"]["relevant_ok"] is None


def test_files_without_relevance_labels_report_none(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "relevant"} for r in items("en")]
    out = run_groundedness(load_items(write_jsonl(tmp_path / "s.jsonl", rows)), load_policy())
    assert "n_relevant" not in out["metrics"]


@pytest.mark.parametrize("value", [2, "yes", 1.0, None])
def test_a_bad_relevant_label_refuses_the_file_naming_the_line(tmp_path, capsys, value):
    rows = items("en")
    src = write_jsonl(tmp_path / "bad.jsonl", [rows[0], {**rows[1], "relevant": value}])
    with pytest.raises(GroundednessInputError, match="line 2: field 'relevant' must be 1"):
        load_items(src)
    assert cli_main(["eval", "groundedness", "--input", str(src), "--home", str(tmp_path / "h")]) == 2
    assert "line 2: field 'relevant' must be 1 or true (answers the question), 0 or false (does not)" in capsys.readouterr().err


def test_true_and_false_labels_read_as_1_and_0(tmp_path):
    # Most tools write JSON booleans for a yes/no label.
    rows = items("en")
    as_booleans = [{**r, "relevant": bool(r["relevant"]), "label": True} for r in rows]
    loaded = load_items(write_jsonl(tmp_path / "b.jsonl", as_booleans))
    assert [i["relevant"] for i in loaded] == [r["relevant"] for r in rows] and {i["label"] for i in loaded} == {1}
    assert all(type(i["relevant"]) is int for i in loaded)
    with_ints = run_groundedness(load_items(write_jsonl(tmp_path / "i.jsonl", rows)), load_policy())["metrics"]
    assert run_groundedness(loaded, load_policy())["metrics"]["irrelevant_flagged"] == with_ints["irrelevant_flagged"]


def test_evidence_in_another_language_is_not_called_off_topic(policy):
    # Words cannot match across languages: an English question answered from a Portuguese source is
    # not judged by them (retrieval and the composer chose that source by meaning).
    question = "How much revenue did Natura report in 2024?"
    answer = "A Natura registrou receita de R$ 7,2 bilhões em 2024 [p1]."
    assert answer_relevance(question, answer, PT + EN, "en", policy) is None
    assert judge_answer(answer, PT + EN, language="en", coverage="medium", policy=policy,
                        question=question)["final_decision"] == "OK"
    # The same answer in the question's language is judged as before.
    assert answer_relevance("Qual foi a receita da Natura em 2024?", answer, PT, "pt", policy) is not None
