"""bench/make_groundedness_set.py: labelled groundedness sets from tiny MultiHop-RAG and FaQuAD fixtures.

The fixtures are written to tmp_path in the real file formats, so nothing here needs ../shared/datasets.
"""

from __future__ import annotations

import difflib
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "make_groundedness_set.py"
ID = re.compile(r"(mh|fq)-[0-9a-f]{8}")
CITATION = re.compile(r"\s?\[([^\[\]]*)\]")
NEGATION = re.compile(r"\b(?:not|never|no|cannot|não)\b|n[’']t\b", re.IGNORECASE)
WORDS = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:[-'’][^\W\d_]+)*")


@pytest.fixture(scope="module")
def tool():
    return load_script(SCRIPT, "make_groundedness_set")


# --- fixtures in the real formats -------------------------------------------------------------------------------

ARTICLES = [
    ("technology", "Elizabeth Lopatto", "The Verge", "https://www.theverge.com/2023/10/3/ftx-trial",
     ["The criminal trial of Sam Bankman-Fried started on October 3, 2023 in New York.",
      "Prosecutors said the FTX founder misused $8 billion of customer funds.",
      "Caroline Ellison testified that she took $14 billion from customers to repay lenders."]),
    ("technology", "David Pierce", "The Verge", "https://www.theverge.com/2023/10/28/google-search-deals",
     ["Google paid $26.3 billion in 2021 to be the default search engine on phones and browsers.",
      "The company reported that the deals are good for consumers.",
      "Apple is a partner in the deals that the Justice Department is examining."]),
    ("business", "Kyle Wiggers", "TechCrunch", "https://techcrunch.com/2023/11/14/acme-robotics-results",
     ["Revenue at Acme Robotics grew 12% in 2023 to $3.2 billion, the company reported on Tuesday.",
      "Chief executive Maria Lopez said the growth came from Europe and Japan.",
      "The firm has 4,500 employees in Texas and Germany."]),
    ("sports", "Bill Bender", "Sporting News", "https://www.sportingnews.com/us/nfl/news/chiefs-broncos",
     ["The Kansas City Chiefs beat the Denver Broncos 27-24 on Sunday.",
      "Travis Kelce caught seven passes for 81 yards in the win.",
      "Patrick Mahomes threw two touchdowns in the fourth quarter."]),
    ("sports", "Vinnie Iyer", "Sporting News", "https://www.sportingnews.com/us/nfl/news/tyreek-hill-record",
     ["Tyreek Hill needs 153 yards per game to reach 2,000 receiving yards this season.",
      "The Miami Dolphins play the Buffalo Bills on December 17 in Florida.",
      "Coach Mike McDaniel said Hill is healthy and ready."]),
    ("technology", "Sarah Perez", "TechCrunch", "https://techcrunch.com/2023/11/06/openai-devday",
     ["OpenAI said ChatGPT reached 100 million weekly users in November 2023.",
      "Sam Altman announced the figure at a developer conference in San Francisco.",
      "The company has 770 employees, according to The Information."]),
]


def _evidence(article: int, fact: int) -> dict:
    category, author, source, url, facts = ARTICLES[article]
    return {"author": author, "category": category, "fact": facts[fact], "published_at": "2023-11-20T10:00:00+00:00",
            "source": source, "title": f"Title {article}", "url": url}


QUERIES = [
    {"query": "Who is the former FTX chief whose criminal trial started in New York, as reported by The Verge?",
     "answer": "Sam Bankman-Fried", "question_type": "inference_query", "evidence_list": [_evidence(0, 0), _evidence(0, 1)]},
    {"query": "Do The Verge and TechCrunch both report billions of dollars in company payments or revenue?",
     "answer": "Yes", "question_type": "comparison_query", "evidence_list": [_evidence(1, 0), _evidence(2, 0)]},
    {"query": "Did Sporting News report that Travis Kelce and Tyreek Hill play for the same team?",
     "answer": "no", "question_type": "temporal_query", "evidence_list": [_evidence(3, 1), _evidence(4, 0)]},
    {"query": "Which company paid billions to be the default search engine and is examined by the Justice Department?",
     "answer": "Google", "question_type": "inference_query", "evidence_list": [_evidence(1, 0), _evidence(1, 2)]},
    {"query": "Do TechCrunch articles report both user growth at OpenAI and growth at Acme Robotics?",
     "answer": "Yes", "question_type": "comparison_query", "evidence_list": [_evidence(5, 0), _evidence(2, 1)]},
    {"query": "What did the company say about the weather on Mars?", "answer": "Insufficient information.",
     "question_type": "null_query", "evidence_list": []},
]

FAQUAD = {"version": "1.0", "data": [
    {"title": "UFMS", "paragraphs": [
        {"context": "A Universidade Federal de Mato Grosso do Sul (UFMS) é uma instituição pública sediada em Campo "
                    "Grande. A UFMS foi criada em 1979 e mantém campi em nove cidades. O orçamento anual da universidade "
                    "é de R$ 1.234,56 milhões. Em 2020, a UFMS tinha 20.000 alunos matriculados.",
         "qas": [{"id": "q1", "question": "Onde é sediada a UFMS?", "answers": [{"text": "Campo Grande", "answer_start": 95}]},
                 {"id": "q2", "question": "Quando a UFMS foi criada?", "answers": [{"text": "1979", "answer_start": 128}]},
                 {"id": "q3", "question": "Qual é o orçamento anual da UFMS?",
                  "answers": [{"text": "R$ 1.234,56 milhões", "answer_start": 0}]}]},
        {"context": "O Conselho Universitário é o órgão máximo da UFMS. O Conselho aprova o regimento e não pode "
                    "delegar essa competência. As reuniões ordinárias ocorrem em 15 de março de cada ano, em Campo Grande.",
         "qas": [{"id": "q4", "question": "Qual é o órgão máximo da UFMS?",
                  "answers": [{"text": "O Conselho Universitário", "answer_start": 0}]},
                 {"id": "q8", "question": "O Conselho pode delegar a aprovação do regimento?",
                  "answers": [{"text": "não pode delegar essa competência", "answer_start": 0}]}]},
    ]},
    {"title": "FACOM", "paragraphs": [
        {"context": "A Faculdade de Computação (FACOM) oferece quatro cursos de graduação. O curso de Ciência da "
                    "Computação foi criado em 18 de outubro de 1987 por Marcos Oliveira. A FACOM tem 60 professores e "
                    "recebe alunos de Dourados e Corumbá.",
         "qas": [{"id": "q5", "question": "Quantos cursos a FACOM oferece?", "answers": [{"text": "quatro", "answer_start": 0}]},
                 {"id": "q6", "question": "Quando foi criado o curso de Ciência da Computação?",
                  "answers": [{"text": "18 de outubro de 1987", "answer_start": 0}]}]},
        {"context": "O Exame Nacional para Ingresso na Pós-Graduação em Computação (POSCOMP) é aplicado pela SBC em "
                    "todo o Brasil. Em 2019, o exame teve 5.000 inscritos em 40 cidades do Brasil.",
         "qas": [{"id": "q7", "question": "Quem aplica o POSCOMP?", "answers": [{"text": "SBC", "answer_start": 0}]}]},
    ]},
]}


def write_datasets(root: Path) -> Path:
    """The fixtures in the datasets' real file formats under `root` (as ../shared/datasets lays them out)."""
    (root / "multihop_rag").mkdir()
    corpus = [{"category": c, "author": a, "published_at": "2023-11-20T10:00:00+00:00", "body": "\n\n".join(facts),
               "title": f"Title {i}", "url": url, "source": s} for i, (c, a, s, url, facts) in enumerate(ARTICLES)]
    (root / "multihop_rag" / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (root / "multihop_rag" / "queries_dev.json").write_text(json.dumps(QUERIES), encoding="utf-8")
    (root / "faquad").mkdir()
    (root / "faquad" / "train.json").write_text(json.dumps(FAQUAD, ensure_ascii=False), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> Path:
    return write_datasets(tmp_path_factory.mktemp("datasets"))


def _run(tool, datasets: Path, out: Path, dataset: str, *extra: str) -> list[dict]:
    assert tool.main(["--dataset", dataset, "--out", str(out), "--datasets", str(datasets), *extra]) == 0
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def rows(tool, datasets, tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("out")
    return _run(tool, datasets, out / "mh.jsonl", "multihop-rag") + _run(tool, datasets, out / "fq.jsonl", "faquad")


# --- helpers --------------------------------------------------------------------------------------------------

def words(text: str) -> set[str]:
    return {w.lower() for w in WORDS.findall(text)}


def cited_claims(answer: str) -> list[tuple[str, str]]:
    """(sentence, doc_id) for each citation, the sentence being the text since the previous citation."""
    out, start = [], 0
    for m in CITATION.finditer(answer):
        sentence = re.sub(r"^[.!?]\s*", "", answer[start:m.start()]).strip()
        out.append((sentence, m.group(1)))
        start = m.end()
    return out


def absent(term: str, text: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(term.lower()) + r"(?![\w]|[.,]\d)", text.lower()) is None


def strip_lead(sentence: str, tool) -> tuple[str, str | None]:
    """The copied part of a sentence and, for a generated English lead, the entity it names."""
    sentence = re.sub(r"^(?:Yes|No)\.\s*", "", sentence)
    for lead in tool.EN_LEADS:
        prefix = lead.format("")
        if sentence.startswith(prefix) and len(sentence) - len(prefix) < 60:
            return "", sentence[len(prefix):]
    for lead in tool.PT_LEADS:
        if sentence.startswith(lead):
            return sentence[len(lead):], None
    return sentence, None


# --- tests ----------------------------------------------------------------------------------------------------

def test_output_schema_and_balance(rows):
    keys = ["id", "question", "context", "answer", "label", "perturbation", "language", "source_id"]
    assert rows and len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert list(r) == keys
        assert r["label"] in (0, 1) and r["language"] in ("en", "pt")
        assert r["perturbation"] in ("none", *self_perturbations())
        assert (r["label"] == 1) == (r["perturbation"] == "none")
        assert isinstance(r["question"], str) and r["question"] and isinstance(r["answer"], str) and r["answer"]
        assert isinstance(r["source_id"], str) and r["source_id"]
        ids = [c["doc_id"] for c in r["context"]]
        assert len(ids) == len(set(ids)) and all(ID.fullmatch(i) for i in ids)
        assert all(isinstance(c["text"], str) and c["text"] for c in r["context"])
        assert all(ID.fullmatch(i) for _s, i in cited_claims(r["answer"])), r["answer"]
    en = [r for r in rows if r["language"] == "en"]
    pt = [r for r in rows if r["language"] == "pt"]
    assert len({r["source_id"] for r in en}) == 5  # the null query is skipped
    assert len({r["source_id"] for r in pt}) == 8
    assert all(r["id"].startswith("mhq-") for r in en) and all(r["id"].startswith("fq:") for r in pt)
    assert all(3 <= len(r["context"]) <= 5 for r in en)  # the gold facts plus 1-2 distractors
    # one faithful and one unfaithful answer per question, never the same text
    by_source: dict[str, list[dict]] = {}
    for r in rows:
        by_source.setdefault(r["source_id"], []).append(r)
    for pair in by_source.values():
        assert [r["label"] for r in pair] == [1, 0]
        assert pair[0]["answer"] != pair[1]["answer"] and pair[0]["context"] == pair[1]["context"]
    assert len({r["perturbation"] for r in rows if r["label"] == 0}) >= 5  # the types rotate


def self_perturbations():
    return ("number", "date", "name", "negation", "citation_swap", "citation_unknown", "unsupported_sentence")


def test_faithful_answers_cite_context_chunks_that_hold_their_words(rows, tool):
    for r in rows:
        if r["label"] != 1:
            continue
        chunks = {c["doc_id"]: c["text"] for c in r["context"]}
        claims = cited_claims(r["answer"])
        assert claims, r["answer"]
        for sentence, doc_id in claims:
            assert doc_id in chunks, (doc_id, r["answer"])
            copied, entity = strip_lead(sentence, tool)
            if entity is not None:  # "The answer is Sam Bankman-Fried [id]." cites a chunk naming it
                assert entity.lower() in chunks[doc_id].lower()
            assert words(copied) <= words(chunks[doc_id]), (sentence, chunks[doc_id])
    leads = [r["answer"] for r in rows if r["label"] == 1 and r["language"] == "en"]
    assert any(a.startswith(("Yes. ", "No. ")) for a in leads)
    assert any("Sam Bankman-Fried [" in a or "Google [" in a for a in leads)


@pytest.fixture(scope="module")
def perturbed(tool, datasets):
    """Every perturbation type tried on every fixture example: [(kind, example, claims)]."""
    out = []
    mh, mh_res = tool.prepare_multihop(datasets / "multihop_rag", 13)
    fq, fq_res = tool.prepare_faquad(datasets / "faquad" / "train.json", 13)
    for examples, res in ((mh, mh_res), (fq, fq_res)):
        for ex in examples:
            for kind in self_perturbations():
                claims = tool.perturb(ex, kind, random.Random(f"test:{ex.source_id}:{kind}"), res)
                if claims is not None:
                    out.append((kind, ex, claims))
    return out


def _changed(tool, ex, claims) -> tuple[str, str, list[str]]:
    """The one claim that changed: (old text, new text, the words inserted)."""
    changed = [(a.text, b.text) for a, b in zip(ex.claims, claims) if a.text != b.text]
    assert len(changed) == 1 and len(claims) == len(ex.claims)
    old, new = changed[0]
    a, b = WORDS.findall(old), WORDS.findall(new)
    inserted = [w for op, _i1, _i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
                if op != "equal" for w in b[j1:j2]]
    return old, new, inserted


def test_every_perturbation_applies_in_both_languages(perturbed):
    kinds = {(kind, ex.language) for kind, ex, _c in perturbed}
    for kind in self_perturbations():
        assert (kind, "en") in kinds and (kind, "pt") in kinds, kind


def test_number_perturbation_puts_in_a_number_absent_from_the_context(perturbed, tool):
    seen = 0
    for _kind, ex, claims in (p for p in perturbed if p[0] == "number"):
        ctx = tool.context_text(ex)
        old, new, inserted = _changed(tool, ex, claims)
        assert inserted and all(absent(w, ctx) for w in inserted), (old, new)
        assert any(re.search(r"\d", w) or w.lower() in tool.EN_SPELLED or w.lower() in tool.PT_SPELLED
                   for w in inserted)
        seen += 1
    assert seen >= 4


def test_date_perturbation_shifts_a_date_to_one_absent_from_the_context(perturbed, tool):
    for _kind, ex, claims in (p for p in perturbed if p[0] == "date"):
        ctx = tool.context_text(ex)
        old, new, inserted = _changed(tool, ex, claims)
        assert len(inserted) == 1, (old, new)
        months = [m.lower() for m in tool.MONTHS_EN + tool.MONTHS_PT] + [d.lower() for d in tool.WEEKDAYS_EN]
        token = inserted[0]
        assert token.isdigit() or token.lower() in months
        if re.fullmatch(r"1\d\d\d|20\d\d", token):
            assert absent(token, ctx)  # a new year
        else:  # a new day or month: the whole date it belongs to is new
            at = new.index(token, len(os.path.commonprefix([old, new])) - len(token))
            dates = [new[a:b] for a, b, _c in tool._date_spans(new, ex.language) if a <= at < b]
            assert dates and absent(dates[0], ctx) and dates[0] not in old, (dates, new)


def test_name_perturbation_puts_in_a_name_from_the_dataset_absent_from_the_context(perturbed, tool):
    for _kind, ex, claims in (p for p in perturbed if p[0] == "name"):
        ctx = tool.context_text(ex)
        old, new, inserted = _changed(tool, ex, claims)
        name = " ".join(inserted)
        assert inserted and inserted[0][0].isupper() and absent(name, ctx), (old, new)


def test_negation_adds_or_removes_one_negation(perturbed, tool):
    added = removed = 0
    for _kind, ex, claims in (p for p in perturbed if p[0] == "negation"):
        old, new, _inserted = _changed(tool, ex, claims)
        delta = len(NEGATION.findall(new)) - len(NEGATION.findall(old))
        assert delta in (1, -1), (old, new)
        added += delta == 1
        removed += delta == -1
    assert added and removed


def test_citation_perturbations(perturbed, tool):
    kinds = set()
    for kind, ex, claims in perturbed:
        chunks = {c.doc_id: c.text for c in ex.context}
        if kind == "citation_unknown":
            moved = [(a, b) for a, b in zip(ex.claims, claims) if a.doc_id != b.doc_id]
            assert len(moved) == 1 and moved[0][0].text == moved[0][1].text
            assert moved[0][1].doc_id not in chunks and ID.fullmatch(moved[0][1].doc_id)
            assert moved[0][1].doc_id[:3] == moved[0][0].doc_id[:3]  # same id format
        elif kind == "citation_swap":
            moved = [(a, b) for a, b in zip(ex.claims, claims) if a.doc_id != b.doc_id]
            assert len(moved) == 1 and moved[0][0].text == moved[0][1].text
            claim, target = moved[0][1], chunks[moved[0][1].doc_id]
            assert claim.doc_id in chunks and claim.text not in target
            copied = claim.entity or claim.text
            assert absent(copied, target) or not words(copied) <= words(target)
        elif kind == "unsupported_sentence":
            assert claims[:-1] == ex.claims and len(claims) == len(ex.claims) + 1
            extra = claims[-1]
            assert extra.doc_id in chunks and all(extra.text not in text for text in chunks.values())
            assert re.search(r"\d|[A-Z]", extra.text[1:])  # numbers or names
        else:
            continue
        kinds.add(kind)
        rendered = tool.render(claims)
        assert rendered != tool.render(ex.claims)
    assert kinds == {"citation_unknown", "citation_swap", "unsupported_sentence"}


def test_same_arguments_give_identical_bytes(tool, datasets, tmp_path):
    env = {**os.environ, "PYTHONHASHSEED": "7"}
    args = ["--dataset", "multihop-rag", "--datasets", str(datasets), "--limit", "4", "--seed", "5"]
    first = tmp_path / "a.jsonl"
    subprocess.run([sys.executable, str(SCRIPT), *args, "--out", str(first)], check=True, env=env,
                   capture_output=True)
    second = tmp_path / "b.jsonl"
    assert tool.main([*args, "--out", str(second)]) == 0  # another process, another hash seed
    assert first.read_bytes() == second.read_bytes()
    assert len({json.loads(x)["source_id"] for x in first.read_text(encoding="utf-8").splitlines()}) == 4
    third = tmp_path / "c.jsonl"
    assert tool.main(["--dataset", "faquad", "--datasets", str(datasets), "--out", str(third)]) == 0
    fourth = tmp_path / "d.jsonl"
    assert tool.main(["--dataset", "faquad", "--datasets", str(datasets), "--out", str(fourth)]) == 0
    assert third.read_bytes() == fourth.read_bytes()


def test_prints_counts(tool, datasets, tmp_path, capsys):
    tool.main(["--dataset", "faquad", "--datasets", str(datasets), "--out", str(tmp_path / "x.jsonl"), "--limit", "3"])
    out = capsys.readouterr().out
    assert "label: 1=3, 0=3" in out and "language: pt=6" in out and "perturbation: none=3" in out


def test_missing_dataset_exits_2_with_one_line(tool, tmp_path, capsys):
    assert tool.main(["--dataset", "faquad", "--datasets", str(tmp_path), "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "faquad" in err and "not found" in err
    (tmp_path / "multihop_rag").mkdir()
    (tmp_path / "multihop_rag" / "corpus.json").write_text("[]", encoding="utf-8")
    assert tool.main(["--dataset", "multihop-rag", "--datasets", str(tmp_path), "--out", str(tmp_path / "y.jsonl")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "queries_dev.json" in err
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "y.jsonl").exists()
