"""The reader's data: the public sets it is trained and measured on, and the one rule that splits them.

Both the training code (`training/reader/`) and `ragate eval reader` read the sets through this module, so the
part held aside for measuring is defined once and the training can never see it.

Sets, under a datasets root laid out as `../shared/datasets` is (`$RAGATE_DATASETS`):

| name | file | task | held aside for `ragate eval reader` |
|---|---|---|---|
| faquad | faquad/train.json | span (pt) | whole articles, about 20% (`FAQUAD_SHARE`) |
| squad2_pt | reader/squad2_pt/dev-v2.0.json | span + no answer (pt) | the articles held aside from XQuAD |
| xquad_en | reader/xquad/xquad.en.json | span (en) | whole articles, about 20% (`XQUAD_SHARE`) |
| squad_en_sample | reader/squad_en_sample/train.jsonl | span (en) | nothing (training only) |
| boolq | reader/boolq/dev.jsonl | yes/no (en) | whole Wikipedia titles, about 25% (`BOOLQ_SHARE`) |
| assin / assin2 | reader/assin/*.xml | entailment (pt) | ASSIN 2's test file (never trained on) |
| sick | reader/sick/SICK.txt | entailment (en, 3-way) | its TEST part; CC BY-NC-SA: evaluation only |

XQuAD and the Portuguese SQuAD 2.0 share their articles (both are SQuAD dev): an article held aside is held
out of both, by title. A part is held aside by a hash of its key (article title, Wikipedia title), not by
position, so adding a set never moves another's split.
"""

from __future__ import annotations

import hashlib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from graph.algorithms.text import json_lines

SPLIT_SALT = "ragate-reader-v1"
FAQUAD_SHARE = 0.2
XQUAD_SHARE = 0.2
BOOLQ_SHARE = 0.25

# Labels as the reader's heads name them (graph/providers/reader.py reads the same tuples off the model).
YES, NO, NOT_STATED = "yes", "no", "not_stated"
ENTAILMENT, CONTRADICTION, NEUTRAL = "entailment", "contradiction", "neutral"
# ASSIN's "None" says only that the first text does not entail the second: a contradiction is also "None".
NOT_ENTAILMENT = "not_entailment"
NLI_LABELS = (ENTAILMENT, CONTRADICTION, NEUTRAL)


class ReaderDataError(ValueError):
    """A reader data file is missing or malformed; the message names the file and the layout expected."""


@dataclass(frozen=True)
class SpanExample:
    id: str
    question: str
    context: str
    answers: tuple[tuple[str, int], ...]  # (text, character start); empty: the context does not answer
    language: str
    source: str


@dataclass(frozen=True)
class PairExample:
    """A (question, passage) yes/no item or a (premise, hypothesis) entailment item."""

    id: str
    first: str
    second: str
    label: str
    language: str
    source: str
    similarity: float | None = None  # ASSIN's 1-5 relatedness of the two texts, where the set gives one


@dataclass
class ReaderSets:
    """The training part and the held-aside part of every set that was found."""

    train_spans: list[SpanExample] = field(default_factory=list)
    train_yesno: list[PairExample] = field(default_factory=list)
    train_nli: list[PairExample] = field(default_factory=list)
    eval_spans: dict[str, list[SpanExample]] = field(default_factory=dict)
    eval_yesno: dict[str, list[PairExample]] = field(default_factory=dict)
    eval_nli: dict[str, list[PairExample]] = field(default_factory=dict)


def held_aside(key: str, share: float) -> bool:
    """True for about `share` of all keys: the key's salted SHA-256, read as a number in [0, 1), is below it."""
    digest = hashlib.sha256(f"{SPLIT_SALT}/{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


# ---------------------------------------------------------------- readers of the public formats


def _read_json(path: Path, layout: str):
    if not path.is_file():
        raise ReaderDataError(f"{path}: no such file (expected {layout})")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReaderDataError(f"{path}: not JSON ({exc}); expected {layout}") from exc


def _json_lines(path: Path, layout: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSON-lines file (`text.json_lines`); a missing file, or
    a line that is no JSON object, is a ReaderDataError naming it and the `layout` expected."""
    if not path.is_file():
        raise ReaderDataError(f"{path}: no such file (expected {layout})")
    for number, row, exc in json_lines(path.read_text(encoding="utf-8").splitlines()):
        if not isinstance(row, dict):
            raise ReaderDataError(f"{path}:{number}: expected {layout} ({exc or 'not a JSON object'})")
        yield number, row


def _realign(context: str, text: str, start: int) -> int | None:
    """The answer's start: as given when the text is there, else its nearest occurrence (a translation can move
    it), else None."""
    if context[start : start + len(text)] == text:
        return start
    hits = [m.start() for m in re.finditer(re.escape(text), context)]
    return min(hits, key=lambda h: abs(h - start)) if hits else None


SQUAD_LAYOUT = 'SQuAD JSON: {"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question", "answers"}]}]}]}'


def read_squad(path: Path, language: str, source: str) -> list[tuple[str, SpanExample]]:
    """(article title, example) for every question of a SQuAD 1.1 / 2.0 file. An answer whose offset does not
    hold its text is realigned, or dropped when the text is nowhere in the context; a question left with no
    answer that was not marked impossible is dropped (it would teach "no answer")."""
    data = _read_json(path, SQUAD_LAYOUT)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ReaderDataError(f"{path}: expected {SQUAD_LAYOUT}")
    out = []
    for index, article in enumerate(data["data"]):
        title = str(article.get("title") or f"article-{index}")
        for paragraph in article.get("paragraphs", []):
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                answers = []
                for answer in qa.get("answers", []):
                    start = _realign(context, answer["text"], int(answer["answer_start"]))
                    if start is not None and answer["text"].strip():
                        answers.append((answer["text"], start))
                impossible = bool(qa.get("is_impossible", False))
                if not answers and not impossible:
                    continue
                out.append((title, SpanExample(str(qa["id"]), qa["question"].strip(), context,
                                               tuple(answers) if not impossible else (), language, source)))
    return out


def read_span_jsonl(path: Path, language: str, source: str) -> list[SpanExample]:
    """Lines of {query, passage, answer} (no offsets): the answer's first occurrence in the passage, else dropped."""
    out = []
    for number, row in _json_lines(path, "JSON lines of query, passage, answer"):
        start = row["passage"].find(row["answer"])
        if start < 0 or not row["answer"].strip():
            continue
        out.append(SpanExample(f"{source}-{number}", row["query"].strip(), row["passage"],
                               ((row["answer"], start),), language, source))
    return out


def read_boolq(path: Path) -> list[tuple[str, PairExample]]:
    """(Wikipedia title, item) for each BoolQ line {question, title, answer (bool), passage}."""
    out = []
    for number, row in _json_lines(path, "BoolQ JSON lines: question, title, answer, passage"):
        question = row["question"].strip()
        question = question[:1].upper() + question[1:] + ("" if question.endswith("?") else "?")
        out.append((row.get("title", ""), PairExample(f"boolq-{number}", question, row["passage"],
                                                      YES if row["answer"] else NO, "en", "boolq")))
    return out


_ASSIN_LABELS = {"entailment": ENTAILMENT, "paraphrase": ENTAILMENT, "none": NOT_ENTAILMENT}


def read_assin(path: Path, source: str) -> list[PairExample]:
    """ASSIN / ASSIN 2 XML pairs (<pair entailment=... id=...><t/><h/></pair>). Paraphrase is entailment;
    "None" is kept as not-entailment: ASSIN has no contradiction label, so a None pair may be either."""
    if not path.is_file():
        raise ReaderDataError(f"{path}: no such file (expected ASSIN XML: <pair entailment id><t/><h/></pair>)")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ReaderDataError(f"{path}: not XML ({exc})") from exc
    out = []
    for pair in root.iter("pair"):
        label = _ASSIN_LABELS.get(pair.get("entailment", "").lower())
        if label is None:
            continue
        try:
            similarity = float(pair.get("similarity", ""))
        except ValueError:
            similarity = None
        out.append(PairExample(f"{source}-{pair.get('id')}", pair.findtext("t", "").strip(),
                               pair.findtext("h", "").strip(), label, "pt", source, similarity))
    return out


def read_sick(path: Path, part: str = "TEST") -> list[PairExample]:
    """SICK.txt's pairs of one SemEval part (TRAIN, TRIAL, TEST), labels lower-cased."""
    if not path.is_file():
        raise ReaderDataError(f"{path}: no such file (expected SICK.txt, tab-separated with a header)")
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    at = {name: header.index(name) for name in ("pair_ID", "sentence_A", "sentence_B", "entailment_label",
                                                 "SemEval_set")}
    out = []
    for line in lines[1:]:
        cells = line.split("\t")
        if len(cells) < len(header) or cells[at["SemEval_set"]] != part:
            continue
        out.append(PairExample(f"sick-{cells[at['pair_ID']]}", cells[at["sentence_A"]], cells[at["sentence_B"]],
                               cells[at["entailment_label"]].lower(), "en", "sick"))
    return out


def read_nli_jsonl(path: Path) -> list[PairExample]:
    """Lines of {premise, hypothesis, label (entailment / contradiction / neutral)}; a bad line is an error that
    names it."""
    out = []
    for number, row in _json_lines(path, "JSON lines of premise, hypothesis, label"):
        try:
            label = str(row["label"]).lower()
            premise, hypothesis = str(row["premise"]), str(row["hypothesis"])
        except (KeyError, TypeError) as exc:
            raise ReaderDataError(f"{path}:{number}: expected {{premise, hypothesis, label}} ({exc})") from exc
        if label not in NLI_LABELS:
            raise ReaderDataError(f"{path}:{number}: label must be one of {', '.join(NLI_LABELS)}, not {label!r}")
        out.append(PairExample(f"{path.stem}-{number}", premise, hypothesis, label, row.get("language", ""),
                               path.stem))
    return out


# ---------------------------------------------------------------- the split


def reader_sets(root: Path) -> ReaderSets:
    """Every set under `root` (the datasets folder), split into its training part and its held-aside part.
    A missing set is skipped; `ragate eval reader` reports which ones it measured."""
    sets = ReaderSets()
    reader = root / "reader"

    xquad_path = reader / "xquad" / "xquad.en.json"
    held_titles: set[str] = set()
    if xquad_path.is_file():
        xquad = read_squad(xquad_path, "en", "xquad_en")
        held_titles = {title for title, _ in xquad if held_aside(f"squad-article/{title}", XQUAD_SHARE)}
        sets.eval_spans["xquad_en"] = [ex for title, ex in xquad if title in held_titles]
        sets.train_spans += [ex for title, ex in xquad if title not in held_titles]

    squad_pt_path = reader / "squad2_pt" / "dev-v2.0.json"
    if squad_pt_path.is_file():
        squad_pt = read_squad(squad_pt_path, "pt", "squad2_pt")
        held = {title for title, _ in squad_pt if title in held_titles
                or held_aside(f"squad-article/{title}", XQUAD_SHARE)}
        sets.eval_spans["squad2_pt"] = [ex for title, ex in squad_pt if title in held]
        sets.train_spans += [ex for title, ex in squad_pt if title not in held]

    faquad_path = root / "faquad" / "train.json"
    if faquad_path.is_file():
        faquad = read_squad(faquad_path, "pt", "faquad")
        sets.eval_spans["faquad"] = [ex for title, ex in faquad if held_aside(f"faquad-article/{title}",
                                                                                FAQUAD_SHARE)]
        sets.train_spans += [ex for title, ex in faquad if not held_aside(f"faquad-article/{title}",
                                                                          FAQUAD_SHARE)]

    sample_path = reader / "squad_en_sample" / "train.jsonl"
    if sample_path.is_file():
        sets.train_spans += read_span_jsonl(sample_path, "en", "squad_en_sample")

    boolq_path = reader / "boolq" / "dev.jsonl"
    if boolq_path.is_file():
        boolq = read_boolq(boolq_path)
        sets.eval_yesno["boolq"] = [ex for title, ex in boolq if held_aside(f"boolq-title/{title}", BOOLQ_SHARE)]
        sets.train_yesno += [ex for title, ex in boolq if not held_aside(f"boolq-title/{title}", BOOLQ_SHARE)]

    assin = reader / "assin"
    for name in ("assin-ptbr-train", "assin-ptbr-dev", "assin-ptbr-test", "assin-ptpt-train", "assin-ptpt-dev",
                 "assin-ptpt-test", "assin2-train-only", "assin2-dev"):
        if (assin / f"{name}.xml").is_file():
            sets.train_nli += read_assin(assin / f"{name}.xml", name)
    if (assin / "assin2-test.xml").is_file():
        sets.eval_nli["assin2"] = read_assin(assin / "assin2-test.xml", "assin2-test")

    sick_path = reader / "sick" / "SICK.txt"
    if sick_path.is_file():
        sets.eval_nli["sick"] = read_sick(sick_path, "TEST")
    return sets
