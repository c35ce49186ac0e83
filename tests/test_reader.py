"""The reader (graph/providers/reader.py) and its data (graph/evaluation/reader_sets.py).

- The split: what `ragate eval reader` measures on is never in the training part (XQuAD's held-aside articles
  are held out of the Portuguese SQuAD too; ASSIN 2's test file and SICK are evaluation only), the same keys
  always fall on the same side, and broken answer offsets are realigned or dropped.
- The shipped model: its files load offline with their SHA-256 checked; a missing or corrupt file is one line
  naming it; it reads spans (also past its first window), yes/no and entailment on plain cases in both languages.
- `ragate eval reader` on files given with --squad / --nli, and `ragate doctor`.
- The contradiction pairs the training makes (training/reader/synthetic.py; it needs no torch).

None of it needs ../shared.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graph.evaluation.reader_sets import (
    NOT_ENTAILMENT,
    ReaderDataError,
    held_aside,
    read_nli_jsonl,
    read_squad,
    reader_sets,
)
from graph.providers.reader import READER_FOLDER, Reader, ReaderUnavailable, load_reader, reader_status

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- the split


def _squad(articles: dict[str, list[tuple[str, str, str, int]]]) -> dict:
    """{title: [(id, question, answer, start)]} over one shared context per article."""
    context = "Warsaw is the capital of Poland. It has 1.7 million people."
    return {"data": [{"title": title, "paragraphs": [{"context": context, "qas": [
        {"id": qid, "question": q, "answers": [{"text": a, "answer_start": s}] if a else [],
         "is_impossible": not a} for qid, q, a, s in qas]}]} for title, qas in articles.items()]}


def _datasets(root: Path) -> Path:
    titles = [f"Article_{n}" for n in range(40)]
    reader = root / "reader"
    for folder in ("xquad", "squad2_pt", "boolq", "assin", "sick"):
        (reader / folder).mkdir(parents=True)
    (reader / "xquad" / "xquad.en.json").write_text(json.dumps(_squad(
        {t: [(f"{t}-q", "What is the capital of Poland?", "Warsaw", 0)] for t in titles})))
    (reader / "squad2_pt" / "dev-v2.0.json").write_text(json.dumps(_squad(
        {t: [(f"{t}-q", "Qual é a capital?", "Warsaw", 0), (f"{t}-x", "Quem?", "", 0)] for t in titles[:30]})))
    (root / "faquad").mkdir()
    (root / "faquad" / "train.json").write_text(json.dumps(_squad(
        {f"DOC_{n}": [(f"doc{n}", "Qual é a capital?", "Warsaw", 0)] for n in range(30)})))
    (reader / "boolq" / "dev.jsonl").write_text("\n".join(json.dumps(
        {"question": "is warsaw the capital of poland", "title": f"T{n}", "answer": n % 3 > 0,
         "passage": "Warsaw is the capital of Poland."}) for n in range(60)))
    pair = '<pair entailment="{}" id="{}"><t>Um homem toca violão</t><h>{}</h></pair>'
    for name, count in (("assin2-train-only", 6), ("assin2-dev", 2), ("assin2-test", 4)):
        pairs = "".join(pair.format("Entailment" if n % 2 else "None", n, f"Um homem toca {name} {n}")
                        for n in range(count))
        (reader / "assin" / f"{name}.xml").write_text(f"<entailment-corpus>{pairs}</entailment-corpus>")
    header = "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tSemEval_set"
    rows = [f"{n}\tA man plays\tA man does not play\tCONTRADICTION\t3.0\t{'TEST' if n % 2 else 'TRAIN'}"
            for n in range(10)]
    (reader / "sick" / "SICK.txt").write_text("\n".join([header, *rows]) + "\n")
    return root


def test_held_aside_parts_never_reach_training(tmp_path):
    sets = reader_sets(_datasets(tmp_path))
    train_ids = {ex.id for ex in sets.train_spans}
    held_xquad = {ex.id for ex in sets.eval_spans["xquad_en"]}
    assert held_xquad and not held_xquad & train_ids
    # An XQuAD article held aside is held out of the Portuguese SQuAD as well (same id, same article).
    assert held_xquad & {ex.id for ex in sets.eval_spans["squad2_pt"]}
    assert not {ex.id for ex in sets.eval_spans["squad2_pt"]} & train_ids
    assert sets.eval_spans["faquad"] and not {ex.id for ex in sets.eval_spans["faquad"]} & train_ids
    assert not {ex.id for ex in sets.eval_yesno["boolq"]} & {ex.id for ex in sets.train_yesno}
    assert sets.eval_yesno["boolq"] and sets.train_yesno
    # ASSIN 2's test file and SICK are measured on, never trained on.
    assert len(sets.eval_nli["assin2"]) == 4 and not [ex for ex in sets.train_nli if "test" in ex.source]
    assert len(sets.eval_nli["sick"]) == 5 and not [ex for ex in sets.train_nli if ex.source == "sick"]
    assert {ex.label for ex in sets.train_nli} == {"entailment", NOT_ENTAILMENT}
    # Unanswerable questions stay unanswerable (no answers), answerable ones keep theirs.
    assert any(not ex.answers for ex in sets.eval_spans["squad2_pt"] + sets.train_spans)


def test_the_split_is_a_fixed_function_of_the_key():
    keys = [f"squad-article/{n}" for n in range(2000)]
    first = [held_aside(k, 0.2) for k in keys]
    assert first == [held_aside(k, 0.2) for k in keys]
    assert 0.15 < sum(first) / len(first) < 0.25
    assert all(held_aside(k, 0.3) for k, held in zip(keys, first) if held)  # a larger share only adds keys


def test_broken_offsets_are_realigned_or_dropped(tmp_path):
    data = _squad({"A": [("ok", "q1", "Poland", 25), ("moved", "q2", "Poland", 3), ("gone", "q3", "Berlin", 0)]})
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    examples = {ex.id: ex for _, ex in read_squad(path, "en", "test")}
    assert examples["ok"].answers == (("Poland", 25),)
    assert examples["moved"].answers == (("Poland", 25),)  # the text is there: its real offset
    assert "gone" not in examples  # nowhere in the context: not taught as "no answer"


def test_nli_file_errors_name_the_line(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"premise": "a", "hypothesis": "b", "label": "entailment"}\n'
                    '{"premise": "a", "hypothesis": "b", "label": "maybe"}\n')
    with pytest.raises(ReaderDataError, match=r"pairs.jsonl:2: label must be one of"):
        read_nli_jsonl(path)
    path.write_text('{"premise": "a"}\n')
    with pytest.raises(ReaderDataError, match=r"pairs.jsonl:1: expected"):
        read_nli_jsonl(path)
    path.write_text('\n{"premise": "a", "hypothesis": "b", "label": "neutral"}\nnot json\n')
    with pytest.raises(ReaderDataError, match=r"pairs.jsonl:3: expected JSON lines of premise, hypothesis, label"):
        read_nli_jsonl(path)


# ---------------------------------------------------------------- the shipped model


@pytest.fixture(scope="module")
def reader() -> Reader:
    return load_reader()


def test_shipped_files_match_their_manifest():
    manifest = json.loads((READER_FOLDER / "manifest.json").read_text())
    assert set(manifest["files"]) == {"reader-int8.onnx", "tokenizer.json"}
    assert manifest["files"]["reader-int8.onnx"]["bytes"] <= 60_000_000
    assert reader_status().startswith("ok")


@pytest.mark.parametrize("broken", ["missing", "corrupt"])
def test_a_bad_file_is_one_line_naming_it(tmp_path, broken):
    folder = tmp_path / "reader_files"
    shutil.copytree(READER_FOLDER, folder)
    onnx = folder / "reader-int8.onnx"
    if broken == "missing":
        onnx.unlink()
    else:
        data = bytearray(onnx.read_bytes())
        data[len(data) // 2] ^= 0xFF
        onnx.write_bytes(bytes(data))
    with pytest.raises(ReaderUnavailable) as caught:
        Reader(folder)
    message = str(caught.value)
    assert str(onnx) in message and "\n" not in message
    assert ("missing" if broken == "missing" else "corrupt") in message
    assert reader_status(folder) == message


SPAN_CASES = [
    ("Who founded the company?", "The company was founded in 1998 by Maria Lopes in Lisbon.", "Maria Lopes"),
    ("Em que ano a empresa foi fundada?", "A empresa foi fundada em 1998 por Maria Lopes, em Lisboa.", "1998"),
    ("What is the capital of Australia?", "Canberra is the capital city of Australia, chosen as a compromise "
                                          "between Sydney and Melbourne.", "Canberra"),
]


@pytest.mark.parametrize("question,passage,answer", SPAN_CASES)
def test_reads_the_answer_span(reader, question, passage, answer):
    span = reader.spans(question, [passage])[0]
    assert answer in span.text and len(span.text) <= len(answer) + 12, span
    assert span.score > 0, span


def test_an_answer_past_the_first_window_is_found(reader):
    filler = " ".join(f"In {1900 + n} the river town held its {n}th harvest fair." for n in range(60))
    passage = filler + " The lighthouse keeper in 2024 was named Odete Ramalho."
    windows = reader.windows("Who was the lighthouse keeper in 2024?", [passage])
    assert len(windows) > 2
    span = reader.spans("Who was the lighthouse keeper in 2024?", [passage])[0]
    assert "Odete Ramalho" in span.text, span


def test_a_long_question_is_read_cut_as_in_training(reader):
    # MultiHop-RAG asks questions of 60 words and more: uncut, the passage would get less room than the window
    # stride, and the tokenizer panics (an exception `except Exception` does not catch).
    question = ("Does the TechCrunch article on software companies report an increase in revenue related to payment "
                "models, while the Hacker News article on The Epoch Times reports an increase in subscription revenue, "
                "and did both publish their reports before the Fortune article on the housing market appeared in "
                "October 2023, which described the affordability of homes as the worst in four decades? ") * 3
    assert len(question.split()) > 150
    cut = reader.question_read(question)
    assert question.startswith(cut) and len(reader._tokenizer.encode(cut, add_special_tokens=False).ids) == 64
    passage = " ".join(f"In {1900 + n} the river town held its {n}th harvest fair." for n in range(40))
    spans, choices = reader.read(question, [passage, "Short."])
    assert len(spans) == len(choices) == 2
    assert reader.question_read("Who was the keeper?") == "Who was the keeper?"


def test_a_passage_that_does_not_answer_scores_below_no_answer(reader):
    span = reader.spans("Who founded the company?", ["The weather in Lisbon was mild all week, with light rain."])[0]
    assert span.score < 0, span


YES_NO_CASES = [
    ("Did the campaign meet the minimum ROAS?", "The campaign stayed below the minimum ROAS of 3.0.", "no"),
    ("Is Canberra the capital of Australia?", "Canberra is the capital city of Australia.", "yes"),
    ("A campanha continua ativa?", "A campanha de Spark Ads segue ativa até o fim de março.", "yes"),
]


@pytest.mark.parametrize("question,passage,label", YES_NO_CASES)
def test_yes_or_no(reader, question, passage, label):
    choice = reader.yes_no(question, [passage])[0]
    assert choice.probabilities[label] > choice.probabilities["no" if label == "yes" else "yes"], choice


NLI_CASES = [
    ("A man is playing a guitar.", "A man is playing an instrument.", "entailment"),
    ("A man is playing a guitar.", "Nobody is playing a guitar.", "contradiction"),
    ("O faturamento cresceu 11% no trimestre.", "O faturamento caiu no trimestre.", "contradiction"),
]


@pytest.mark.parametrize("premise,claim,label", NLI_CASES)
def test_entailment(reader, premise, claim, label):
    choice = reader.entailment([(premise, claim)])[0]
    assert choice.label == label, choice


def test_batches_read_the_same_as_one_at_a_time(reader):
    pairs = [(p, c) for p, c, _ in NLI_CASES]
    together = reader.entailment(pairs)
    alone = [reader.entailment([pair])[0] for pair in pairs]
    for a, b in zip(together, alone):
        assert a.label == b.label
        assert all(abs(a.probabilities[k] - b.probabilities[k]) < 1e-3 for k in a.probabilities)


# ---------------------------------------------------------------- the commands


def _ragate(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graph.entrypoints.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False)


def test_eval_reader_reads_files_given(tmp_path):
    squad = tmp_path / "tiny.json"
    squad.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [
        {"context": SPAN_CASES[0][1], "qas": [{"id": "a", "question": SPAN_CASES[0][0], "answers": [
            {"text": "Maria Lopes", "answer_start": SPAN_CASES[0][1].index("Maria Lopes")}]}]}]}]}))
    nli = tmp_path / "tiny.jsonl"
    nli.write_text("\n".join(json.dumps({"premise": p, "hypothesis": c, "label": label})
                             for p, c, label in NLI_CASES) + "\n")
    out = tmp_path / "out"
    done = _ragate("eval", "reader", "--squad", str(squad), "--nli", str(nli), "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "reader.json").read_text())
    assert result["sets"][f"squad:{squad}"]["f1"] == 1.0
    assert result["sets"][f"nli:{nli}"]["acc"] == 1.0
    assert result["metrics"]["window_ms_p50"] > 0 and result["metrics"]["question_ms_p50"] > 0
    assert "window_ms_p50" in done.stdout


def test_eval_reader_missing_folder_is_one_line(tmp_path):
    done = _ragate("eval", "reader", "--data-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no such folder" in done.stderr and "README" in done.stderr


def test_doctor_reports_the_reader():
    done = _ragate("doctor", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("reader") and "ok" in done.stdout.splitlines()[0]


# ---------------------------------------------------------------- contradictions made for training


def test_negations_in_both_languages():
    from training.reader.synthetic import negations, number_changed

    assert "A man is not playing a guitar" in negations("A man is playing a guitar", "en")
    assert "No man is playing a guitar" in negations("A man is playing a guitar", "en")
    assert negations("There is no man playing", "en") == ["There is a man playing"]
    assert "O cara não está correndo" in negations("O cara está correndo", "pt")
    assert negations("O cara não está correndo", "pt") == ["O cara está correndo"]
    assert negations("Running fast", "en") == []
    changed = number_changed("Sales grew 11% in 2026", random.Random(3))
    assert changed and changed != "Sales grew 11% in 2026"


def test_statements_asked_as_yes_no_questions():
    from graph.evaluation.reader_sets import PairExample
    from training.reader.synthetic import as_question, yes_no_from_entailment

    rng = random.Random(0)
    asked = {as_question("A man is playing a guitar.", "en", rng) for _ in range(20)}
    assert asked == {"Is a man playing a guitar?", "Is it true that a man is playing a guitar?"}
    assert as_question("Obama signed the law in 2010.", "en", rng) == "Is it true that Obama signed the law in 2010?"
    assert {as_question("O homem está correndo", "pt", rng) for _ in range(20)} == {
        "O homem está correndo?", "É verdade que o homem está correndo?"}
    pairs = [PairExample(str(n), "Um homem toca violão", "Um homem toca", label, "pt", "t")
             for n, label in enumerate(["entailment", "contradiction", "neutral", "not_entailment"])]
    made = yes_no_from_entailment(pairs, rng, share=1.0)
    assert [ex.label for ex in made] == ["yes", "no", "not_stated"]  # "not entailment" says neither
    assert all(ex.second == "Um homem toca violão" for ex in made)


def test_questions_an_llm_wrote_are_kept_only_when_the_passage_decides_them():
    from training.reader.generate import checked_questions

    passage = "The campaign ran for six weeks. It stayed below the minimum ROAS of 3.0 set by the brand."
    reply = ('Sure! {"yes_question": "Did the campaign run for six weeks?", "yes_sentence": "The campaign ran for '
             'six weeks.", "no_question": "Did the campaign reach the ROAS the brand asked for?", "no_sentence": '
             '"It stayed below the   minimum ROAS of 3.0 set by the brand."}')
    kept, dropped = checked_questions(reply, passage)
    assert kept == [("Did the campaign run for six weeks?", "yes"),
                    ("Did the campaign reach the ROAS the brand asked for?", "no")] and dropped == []
    invented = reply.replace("ran for six weeks.\"", "ran for ten weeks.\"")
    assert checked_questions(invented, passage)[1] == ["yes: sentence not in the passage"]
    copied = reply.replace("Did the campaign run for six weeks?", "The campaign ran for six weeks?")
    assert checked_questions(copied, passage)[1] == ["yes: copies the sentence"]
    assert checked_questions("no idea", passage) == ([], ["no JSON"])
