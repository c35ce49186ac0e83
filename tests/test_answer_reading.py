"""The reader checks the direct answer (graph/algorithms/answer_reading.py; compose and judge use it): only a
direct answer the reader confirms is given, a contradicted one is blocked, and the reasoning says which."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from graph.algorithms.answer_reading import (
    CONFIRMED,
    CONTRADICTED,
    UNCHECKED,
    UNSURE,
    check_direct_answer,
    token_f1,
    verdict_with_reading,
)
from graph.policy import ReaderChecks

SETTINGS = ReaderChecks()


@dataclass
class Span:
    text: str
    score: float
    start: int = 0  # where the reader read it in its passage


@dataclass
class Choice:
    label: str
    probabilities: dict

    @property
    def confidence(self) -> float:
        return self.probabilities[self.label]


class ScriptedReader:
    """A reader that reads what it is told to, and records what it was asked."""

    def __init__(self, span: str = "", span_score: float = 1.0, yes: float = 0.5, no: float = 0.5):
        self.span, self.span_score, self.yes, self.no = span, span_score, yes, no
        self.asked: list[tuple[str, list[str]]] = []

    def spans(self, question, passages):
        self.asked.append((question, list(passages)))
        return [Span(self.span, self.span_score) for _ in passages]

    def yes_no(self, question, passages):
        self.asked.append((question, list(passages)))
        p = {"yes": self.yes, "no": self.no, "not_stated": max(0.0, 1 - self.yes - self.no)}
        return [Choice(max(p, key=p.get), p)]


SENTENCE = "The campaign was paused because it stayed below the minimum ROAS of 3.0."


@pytest.mark.parametrize(("said", "yes", "no", "outcome"), [
    ("yes", 0.9, 0.05, CONFIRMED),
    ("yes", 0.2, 0.75, CONTRADICTED),
    ("yes", 0.66, 0.31, UNSURE),
    ("no", 0.1, 0.85, CONFIRMED),
])
def test_a_yes_no_answer_is_given_only_when_the_reader_reads_the_same(said, yes, no, outcome):
    # The question names no state (met, below, active, …): the reader's yes/no head reads it.
    question = "Did the campaign move its budget to TikTok?"
    reader = ScriptedReader(yes=yes, no=no)
    check = check_direct_answer(reader, question, said.capitalize(), said, [SENTENCE], SETTINGS)
    assert check.outcome == outcome and check.shown == (outcome == CONFIRMED)  # confirm_yes_no
    assert reader.asked == [(question, [SENTENCE])]
    assert said in check.reason or ("yes" if said == "no" else "no") in check.reason


@pytest.mark.parametrize(("question", "said", "outcome"), [
    ("Did the campaign meet the minimum ROAS?", "no", CONFIRMED),
    ("Did the campaign meet the minimum ROAS?", "yes", CONTRADICTED),
    ("Did the campaign stay below the minimum ROAS?", "yes", CONFIRMED),
    ("A campanha atingiu o ROAS mínimo?", "não", CONFIRMED),  # a question in Portuguese, its sentence in English
])
def test_a_state_and_its_opposite_decide_without_the_yes_no_head(question, said, outcome):
    """The shipped head reads the first question as yes (0.88) against SENTENCE: where the words of a state and its
    opposite decide, it is not asked."""
    reader = ScriptedReader(yes=0.88, no=0.05)
    method = {"não": "no"}.get(said, said)
    check = check_direct_answer(reader, question, said.capitalize(), method, [SENTENCE], SETTINGS)
    assert check.outcome == outcome and reader.asked == []


@pytest.mark.parametrize(("direct", "span", "score", "outcome"), [
    ("R$ 3,9 milhões", "R$ 3,9 milhões", 2.0, CONFIRMED),
    ("3,9 milhões", "R$ 3,9 milhões", 2.0, CONFIRMED),
    ("16", "16 to 8", 1.9, CONTRADICTED),     # the time fell from 16 to 8: "16" alone is not what it reads
    ("16", "16 to 8 business days", -0.4, CONTRADICTED),  # what the shipped reader reads there
    ("Taylor Swift", "Swift", 0.9, CONFIRMED),
    ("16", "8 business days", 1.5, CONTRADICTED),
    ("16", "8 business days", -0.5, UNSURE),  # the reader finds no answer there: it contradicts nothing
])
def test_a_value_is_given_only_when_the_readers_span_says_it(direct, span, score, outcome):
    reader = ScriptedReader(span=span, span_score=score)
    check = check_direct_answer(reader, "What was the average refund time?", direct, "value",
                                ["The average refund time fell from 16 to 8 business days."], SETTINGS)
    assert check.outcome == outcome, check


RELATIONS = {"before": ("before", "antes de"), "after": ("after", "depois de")}


@pytest.mark.parametrize(("question", "direct", "outcome"), [
    ("What was the average refund time before the process changes?", "16", CONFIRMED),
    ("What was the average refund time before the process changes?", "8", CONTRADICTED),
    ("What was the average refund time after the process changes?", "16", CONTRADICTED),
    ("What was the average refund time after the process changes?", "8 business days", CONFIRMED),
])
def test_the_end_of_a_change_the_question_asks_for_is_confirmed(question, direct, outcome):
    reader = ScriptedReader(span="16 to 8 business days", span_score=-0.4)
    check = check_direct_answer(reader, question, direct, "value",
                                ["The average refund time fell from 16 to 8 business days."], SETTINGS,
                                relations=RELATIONS)
    assert check.outcome == outcome, check


def test_each_part_of_a_several_part_answer_is_read_in_its_own_sentence():
    reader = ScriptedReader(span="11,1%")
    check = check_direct_answer(reader, "Quanto cresceram as vendas e a margem?", "11,1%; 11,1%", "value",
                                ["As vendas cresceram 11,1%.", "A margem cresceu 11,1%."], SETTINGS)
    assert check.outcome == CONFIRMED
    assert reader.asked == [("Quanto cresceram as vendas e a margem?", ["As vendas cresceram 11,1%.",
                                                                        "A margem cresceu 11,1%."])]


def test_token_f1_reads_words_not_punctuation():
    assert token_f1("R$ 3,9 milhões", "3,9 milhões") == pytest.approx(2 * 0.75 / 1.75)
    assert token_f1("Sam Bankman-Fried", "sam bankman fried") == 1.0
    assert token_f1("16", "8") == 0.0


VERDICT = {"scores": {"quality": 0.9, "utility": 0.8, "groundedness": 1.0},
           "reasoning": {"quality": "q", "utility": "u", "groundedness": "g"}, "final_decision": "OK"}


def test_the_judge_blocks_a_contradicted_direct_answer_and_says_what_the_reader_read():
    check = {"outcome": CONTRADICTED, "reading": "no 0.91", "reason": "the reader reads «no» (0.91) where the "
                                                                      "direct answer says «yes»"}
    verdict = verdict_with_reading(VERDICT, check, "Yes", 0.2)
    assert verdict["final_decision"] == "BLOCK" and verdict["scores"]["groundedness"] == 0.2
    assert verdict["reasoning"]["groundedness"] == "g; the direct answer is contradicted: " + check["reason"]
    assert verdict["reasoning"]["direct_answer"] == check["reason"]
    assert VERDICT["final_decision"] == "OK"  # the verdict it was given is not changed in place


def test_the_reasoning_says_why_a_direct_answer_was_withheld_or_not_checked():
    unsure = {"outcome": UNSURE, "reading": "yes 0.66", "reason": "the reader is not sure of «yes» (0.66)"}
    verdict = verdict_with_reading(VERDICT, unsure, None, 0.2)
    assert verdict["final_decision"] == "OK" and verdict["reasoning"]["direct_answer"].startswith("withheld: ")
    missing = {"outcome": UNCHECKED, "reading": "", "reason": "not checked: the reader is unavailable (x)"}
    verdict = verdict_with_reading(VERDICT, missing, "38%", 0.2)
    assert verdict["final_decision"] == "OK" and "not checked" in verdict["reasoning"]["direct_answer"]
    assert verdict_with_reading(VERDICT, {}, "38%", 0.2) == VERDICT


# --- the whole graph, on the bundled samples, with the shipped reader ----------------------------------------


def test_the_pinterest_campaign_is_never_said_to_meet_the_minimum_roas(ask):
    """Issue 44: "Did the Pinterest campaign meet the minimum ROAS?" opened with "Yes" and got OK, above the
    bullet that says it "stayed below the minimum ROAS of 3.0"."""
    state = ask("Did the Pinterest campaign meet the minimum ROAS?")
    assert (state["direct_answer"] or "").lower() != "yes", state["answer"]
    assert not state["answer"].lower().startswith("yes"), state["answer"]
    assert "stayed below the minimum ROAS of 3.0" in state["answer"]
    assert state["direct_check"]["outcome"] in (CONTRADICTED, UNSURE, CONFIRMED)
    if state["direct_answer"] is None:
        assert state["verdict"]["reasoning"]["direct_answer"].startswith("withheld: ")


def test_the_refund_time_is_not_answered_with_the_time_before_the_change(ask):
    """Issue 44: "What was the average refund time after the process changes?" opened with "16" (it fell from
    16 to 8 business days)."""
    state = ask("What was the average refund time after the process changes?")
    assert state["direct_answer"] != "16", state["answer"]
    assert "fell from 16 to 8 business days" in state["answer"]


def test_without_the_reader_the_answer_stands_and_the_reasoning_says_it_was_not_checked(ask, monkeypatch):
    import graph.runtime.direct_reading as direct_reading
    from graph.providers.reader import ReaderUnavailable

    def missing():
        raise ReaderUnavailable("reader file graph/providers/reader_files/reader.onnx not found")

    monkeypatch.setattr(direct_reading, "load_reader", missing)
    state = ask("Qual foi o ROAS da campanha no TikTok?")
    assert state["direct_answer"] and state["direct_check"]["outcome"] == UNCHECKED
    assert "reader is unavailable" in state["verdict"]["reasoning"]["direct_answer"]
    assert any("reader unavailable" in e for e in state["errors"])


def _judged_alone(tmp_path, question: str, doc_id: str, content: str, direct: str, point: str):
    """The judge's verdict on an answer opening with `direct` over one cited `point`, with no `direct_check` (a judge
    called on its own, or after a composer that did not read its direct answer): it reads the direct answer in the
    chunk the opening cites."""
    from conftest import runtime_for

    from graph.context import Context
    from nodes.judge import judge

    chunk = {"id": f"{doc_id}#0", "docId": doc_id, "assetId": doc_id, "assetName": doc_id, "rerankScore": 0.9,
             "scores": {}, "metadata": {"language": "en"}, "content": content}
    state = {"question": question, "language": "en", "answer": f"{direct} [{doc_id}].\n\n- {point} [{doc_id}].",
             "direct_answer": direct, "reranked": [chunk], "coverage_level": "medium", "citations_used": [doc_id],
             "rag": {}}
    return judge(state, runtime_for(Context(home=str(tmp_path), tenant="acme")))["verdict"]


def test_the_judge_reads_a_direct_answer_it_is_given_and_blocks_a_contradicted_one(tmp_path):
    verdict = _judged_alone(tmp_path, "What was the average refund time after the process changes?",
                            "acme-ops-returns-2026", "Refunds are now issued within 10 business days. The average "
                            "refund time fell from 16 to 8 business days.", "16",
                            "The average refund time fell from 16 to 8 business days")
    assert verdict["final_decision"] == "BLOCK", verdict
    assert "another answer" in verdict["reasoning"]["direct_answer"]
    assert "groundedness" in verdict["scores"] and "contradicted" in verdict["reasoning"]["groundedness"]


def test_the_judge_blocks_a_yes_that_the_cited_sentence_contradicts(tmp_path):
    """A chat model's "Yes" to "Did the Pinterest campaign meet the minimum ROAS?" is read in the sentence it cites,
    by its words of a state and its opposite: "stayed below" answers no, and the judge blocks it."""
    sentence = "The Pinterest campaign was paused on 1 March 2026 because it stayed below the minimum ROAS of 3.0"
    question = "Did the Pinterest campaign meet the minimum ROAS?"
    verdict = _judged_alone(tmp_path, question, "acme-perf-pinterest-2026", sentence + ".", "Yes", sentence)
    assert verdict["final_decision"] == "BLOCK", verdict
    assert "opposite" in verdict["reasoning"]["direct_answer"]
    no = _judged_alone(tmp_path, question, "acme-perf-pinterest-2026", sentence + ".", "No", sentence)
    assert no["final_decision"] != "BLOCK", no


def test_a_state_question_opens_with_the_sentence_naming_the_state_in_the_document_naming_its_subject(ask):
    """"Is the Pinterest campaign still active?" opened with "The campaign is active …" of the Google campaign's
    report (its words: campaign, active), verdict OK: a reader takes it for the Pinterest campaign's. The points
    now come from the documents naming what the question names, and a yes/no question about a state opens with the
    sentence naming that state or its opposite."""
    state = ask("Is the Pinterest campaign still active?")
    lines = [line for line in state["answer"].splitlines() if line.startswith("- ")]
    assert lines and "paused" in lines[0] and "[acme-perf-pinterest-2026]" in lines[0], state["answer"]
    assert "acme-perf-google-pmax-2026" not in state["answer"], state["answer"]


def _right_or_absent_questions() -> list[tuple[str, str]]:
    """samples/questions.md, "Yes/no and before/after questions": (question, right direct answer)."""
    from conftest import SAMPLES

    text = (SAMPLES / "questions.md").read_text(encoding="utf-8")
    section = text.split("## Yes/no and before/after questions", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| Y")]
    return [(cells[1], cells[2]) for cells in rows]


RIGHT_OR_ABSENT = _right_or_absent_questions()

# Answered since issue 44's state words, change ends and year tie (Y3: its sentence in English, read with the
# question translated; Y10 too, though a Portuguese document scores close to it: read again in English when the
# question's own words give no direct answer).
ANSWERED = {"Y1": "No", "Y2": "Yes", "Y3": "Não", "Y4": "Sim", "Y5": "8 business days", "Y6": "16 business days",
            "Y7": "11.2%", "Y9": "No", "Y10": "Sim"}


@pytest.mark.parametrize("sid", sorted(ANSWERED))
def test_a_sample_yes_no_or_change_question_gets_its_right_direct_answer(ask, sid):
    question = RIGHT_OR_ABSENT[int(sid[1:]) - 1][0]
    state = ask(question)
    assert state["direct_answer"] == ANSWERED[sid], state["answer"]
    assert state["verdict"]["final_decision"] == "OK", state["verdict"]


@pytest.mark.parametrize(("question", "right"), RIGHT_OR_ABSENT)
def test_a_sample_direct_answer_is_right_or_absent(ask, question, right):
    from graph.algorithms.text import fold

    assert len(RIGHT_OR_ABSENT) == 10
    state = ask(question)
    direct = state["direct_answer"]
    said, meant = (set(re.findall(r"\w+", fold(t))) for t in (direct or "", right))
    # "8" or "8 business days" for "8 business days"; never "16", nor "9.8%" for "11.2%".
    assert direct is None or said <= meant or meant <= said, (
        f"{question!r} opened with {direct!r}; right: {right!r}\n{state['answer']}")
    if direct is None and state["direct_check"]:
        assert state["verdict"]["reasoning"]["direct_answer"].startswith("withheld: ")


def test_the_readers_own_span_becomes_a_direct_answer_read_in_its_sentence():
    from graph.algorithms.answer_reading import span_answer

    chunk = {"docId": "acme-ops-returns-2026", "content": "Returns review. Acme Moda's online return rate was 9.8% of "
             "orders in 2025, down from 11.2% in 2024. In stores, exchanges were 3.1% of transactions."}
    found = span_answer(Span("11.2%", 5.0), chunk, max_words=12)
    assert found.text == "11.2%" and found.doc_ids == ("acme-ops-returns-2026",) and found.method == "span"
    assert found.sentence.startswith("Acme Moda's online return rate was 9.8%")
    assert span_answer(Span("a span far longer than any direct answer may ever be, twelve words", 5.0), chunk, 12) is None
    assert span_answer(Span("not in the text", 5.0), chunk, 12) is None
    # Read where the reader read it: the second sentence saying the same words is its evidence, not the first.
    twice = {"docId": "d", "content": "The 2024 review ranked Acme the best retailer in Recife. In the 2025 guide, "
             "Acme came first as the best retailer in Recife."}
    second = twice["content"].rindex("best retailer in Recife")
    assert span_answer(Span("best retailer in Recife", 5.0, second), twice, 12).sentence.startswith("In the 2025 guide")
    assert span_answer(Span("best retailer in Recife", 5.0, 0), twice, 12).sentence.startswith("The 2024 review")
