"""Benchmark loaders, all returning one shape: a `Dataset` of documents and queries with their gold.

- MultiHop-RAG (`multihop-rag`): corpus.json (news articles) and a queries file (queries_dev.json,
  or the full MultiHopRAG.json). A document's id is a slug of its url plus a hash of the url; a
  query's gold is its evidence facts (and the documents they come from). `null_query` questions have
  no evidence: they are kept (for answer evaluation) but carry no retrieval gold.
- BEIR (`beir`, e.g. SciFact): corpus.jsonl ({_id, title, text}), queries*.jsonl ({_id, text}) and a
  qrels .tsv (query-id, corpus-id, score, with a header line). Only queries with a qrel are kept.
- SQuAD format (`squad`, e.g. FaQuAD): data[].paragraphs[].{context, qas[].{id, question}}. Each
  paragraph is a document (id "<title index>-<paragraph index>"), a question's gold is its
  paragraph. Corpus and queries may be the same file; when they differ, a question's paragraph is
  found in the corpus by its text.

The files are never copied: they are read where they are (`--data-dir`, `--corpus`, ... or
`$RAGATE_DATASETS`, by default ../shared/datasets).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graph import settings
from graph.algorithms.text import json_lines
from graph.evaluation.metrics import strip_ws

DATASETS = ("multihop-rag", "beir", "squad")
# Folder of each dataset under $RAGATE_DATASETS (or ../shared/datasets) when no path is given.
DEFAULT_FOLDERS = {"multihop-rag": "multihop_rag", "beir": "scifact", "squad": "faquad"}
# What a folder standing for each dataset holds, and where the public copy comes from (README, "Where the
# public data comes from"): said when a folder is missing, so a user outside this repository's set-up can
# make one.
LAYOUTS = {
    "multihop-rag": "a folder with corpus.json and queries_dev.json (or MultiHopRAG.json), from MultiHop-RAG "
                    "(github.com/yixuantt/MultiHop-RAG, dataset/)",
    "beir": "a BEIR folder with corpus.jsonl, queries*.jsonl and qrels/*.tsv (e.g. SciFact from the BEIR benchmark)",
    "squad": "a folder with one SQuAD v1.1 .json file, or the file itself as --corpus (e.g. FaQuAD's train.json, "
             "github.com/liafacom/faquad, data/)",
}
DOC_TYPES = {"multihop-rag": "news", "beir": "abstract", "squad": "paragraph"}
NULL_TYPE = "null_query"


class DatasetError(ValueError):
    """A dataset file is missing, ambiguous or malformed (the message names the flag or file)."""


@dataclass
class EvalDocument:
    id: str
    title: str
    text: str
    # date (YYYY-MM-DD), source, sourceUrl, category, ... whatever the dataset gives.
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class EvalQuery:
    id: str
    text: str
    type: str | None
    # facts: evidence strings a retrieved chunk must contain (MultiHop-RAG);
    # docs: {document id: relevance grade} (every dataset that can name its gold documents).
    gold: dict[str, Any] = field(default_factory=dict)
    answer: Any = None

    @property
    def facts(self) -> list[str]:
        return list(self.gold.get("facts") or [])

    @property
    def docs(self) -> dict[str, int]:
        return dict(self.gold.get("docs") or {})

    @property
    def has_gold(self) -> bool:
        """Whether the query can be scored for retrieval (null queries cannot)."""
        return bool(self.facts or any(g > 0 for g in self.docs.values()))


@dataclass
class Dataset:
    name: str                      # multihop-rag | beir | squad
    documents: list[EvalDocument]
    queries: list[EvalQuery]
    files: dict[str, Path]         # corpus, queries, qrels: what was read
    doc_type: str
    warnings: list[str] = field(default_factory=list)

    @property
    def corpus_files(self) -> list[Path]:
        return [self.files["corpus"]]

    @property
    def types(self) -> list[str]:
        return sorted({q.type for q in self.queries if q.type})


# --- helpers -----------------------------------------------------------------------------------


def _slug(text: str, max_len: int = 48) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-")
    return slug[:max_len].rstrip("-")


def url_doc_id(url: str) -> str:
    """Stable id of a news article: the last part of its url as a slug, plus 10 hex of its hash."""
    digest = hashlib.sha1(url.strip().encode("utf-8")).hexdigest()[:10]
    tail = _slug(url.strip().rstrip("/").rsplit("/", 1)[-1]) or "doc"
    return f"{tail}-{digest}"


def iso_date(value: Any) -> str | None:
    """'2023-11-27 08:45:59.000000000Z' / '2023-09-28T12:00:00+00:00' -> '2023-11-27'."""
    m = re.match(r"\s*(\d{4}-\d{2}-\d{2})", str(value or ""))
    return m.group(1) if m else None


def _clean_meta(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if v not in (None, "", "None")}


def _read_json(path: Path, flag: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{flag} {path}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{flag} {path}: not UTF-8 text") from exc


def _read_jsonl(path: Path, flag: str) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for lineno, obj, exc in json_lines(fh):
            if exc is not None:
                raise DatasetError(f"{flag} {path}:{lineno}: invalid JSON ({exc.msg})") from exc
            if not isinstance(obj, dict):
                raise DatasetError(f"{flag} {path}:{lineno}: a line must be a JSON object")
            rows.append(obj)
    return rows


def _need(obj: dict, key: str, where: str) -> Any:
    if key not in obj:
        raise DatasetError(f"{where}: field '{key}' is missing")
    return obj[key]


def _file(path: str | Path | None, flag: str) -> Path | None:
    if path is None:
        return None
    p = Path(path).expanduser()
    if not p.is_file():
        raise DatasetError(f"{flag}: no such file {p}")
    return p


# --- MultiHop-RAG ------------------------------------------------------------------------------


def load_multihop(corpus: Path, queries: Path) -> Dataset:
    raw_docs = _read_json(corpus, "--corpus")
    if not isinstance(raw_docs, list):
        raise DatasetError(f"--corpus {corpus}: expected a JSON list of articles")
    documents: list[EvalDocument] = []
    by_url: dict[str, str] = {}
    warnings: list[str] = []
    for i, d in enumerate(raw_docs):
        where = f"--corpus {corpus}: article {i}"
        if not isinstance(d, dict):
            raise DatasetError(f"{where}: expected an object")
        url = str(_need(d, "url", where)).strip()
        body = str(_need(d, "body", where) or "")
        doc_id = url_doc_id(url)
        if url in by_url:
            warnings.append(f"{where}: duplicate url {url}; skipped")
            continue
        by_url[url] = doc_id
        documents.append(EvalDocument(
            id=doc_id, title=str(d.get("title") or doc_id), text=body,
            metadata=_clean_meta({"date": iso_date(d.get("published_at")), "source": d.get("source"),
                                  "sourceUrl": url, "category": d.get("category"), "author": d.get("author")}),
        ))
    raw_q = _read_json(queries, "--queries")
    if not isinstance(raw_q, list):
        raise DatasetError(f"--queries {queries}: expected a JSON list of queries")
    out: list[EvalQuery] = []
    for i, q in enumerate(raw_q):
        where = f"--queries {queries}: query {i}"
        if not isinstance(q, dict):
            raise DatasetError(f"{where}: expected an object")
        text = str(_need(q, "query", where))
        qtype = str(q.get("question_type") or "") or None
        facts, docs = [], {}
        for e in q.get("evidence_list") or []:
            fact = str(e.get("fact") or "")
            if strip_ws(fact):  # an empty fact would "match" every chunk
                facts.append(fact)
            url = str(e.get("url") or "").strip()
            if url in by_url:
                docs[by_url[url]] = 1
            elif url:
                warnings.append(f"{where}: evidence url {url} is not in the corpus")
        gold = {} if qtype == NULL_TYPE else {"facts": facts, "docs": docs}
        out.append(EvalQuery(id=str(q.get("id") or f"q{i}"), text=text, type=qtype, gold=gold, answer=q.get("answer")))
    return Dataset("multihop-rag", documents, out, {"corpus": corpus, "queries": queries}, DOC_TYPES["multihop-rag"],
                   warnings)


# --- BEIR --------------------------------------------------------------------------------------


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """query-id -> {corpus-id: score}; the first line is a header (skipped when its score is not a number)."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        for lineno, row in enumerate(csv.reader(fh, delimiter="\t"), start=1):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 3:
                raise DatasetError(f"--qrels {path}:{lineno}: expected query-id, corpus-id, score")
            try:
                score = int(float(row[2]))
            except ValueError:
                if lineno == 1:
                    continue  # header
                raise DatasetError(f"--qrels {path}:{lineno}: score {row[2]!r} is not a number") from None
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = score
    return qrels


def load_beir(corpus: Path, queries: list[Path], qrels_path: Path) -> Dataset:
    documents = []
    seen: set[str] = set()
    warnings: list[str] = []
    for row in _read_jsonl(corpus, "--corpus"):
        doc_id = str(_need(row, "_id", f"--corpus {corpus}"))
        if doc_id in seen:
            warnings.append(f"--corpus {corpus}: duplicate _id {doc_id}; skipped")
            continue
        seen.add(doc_id)
        documents.append(EvalDocument(id=doc_id, title=str(row.get("title") or ""), text=str(row.get("text") or ""),
                                      metadata={"source": corpus.parent.name}))
    qrels = read_qrels(qrels_path)
    texts: dict[str, str] = {}
    for path in queries:
        for row in _read_jsonl(path, "--queries"):
            texts.setdefault(str(_need(row, "_id", f"--queries {path}")), str(row.get("text") or ""))
    out = []
    missing = [qid for qid in qrels if qid not in texts]
    if missing:
        warnings.append(f"--qrels {qrels_path}: {len(missing)} query ids have no text in the queries file(s)")
    unknown_docs = sum(1 for rel in qrels.values() for d in rel if d not in seen)
    if unknown_docs:
        warnings.append(f"--qrels {qrels_path}: {unknown_docs} judged documents are not in the corpus")
    for qid, text in texts.items():  # queries-file order, only the judged ones
        if qid in qrels:
            out.append(EvalQuery(id=qid, text=text, type=None, gold={"docs": dict(qrels[qid])}))
    return Dataset("beir", documents, out, {"corpus": corpus, "queries": queries[0], "qrels": qrels_path},
                   DOC_TYPES["beir"], warnings)


# --- SQuAD format ------------------------------------------------------------------------------


def _squad_paragraphs(path: Path, flag: str):
    raw = _read_json(path, flag)
    data = raw.get("data") if isinstance(raw, dict) else None
    if not isinstance(data, list):
        raise DatasetError(f"{flag} {path}: expected SQuAD format ({{\"data\": [{{\"title\", \"paragraphs\"}}]}})")
    for ti, article in enumerate(data):
        for pi, para in enumerate(article.get("paragraphs") or []):
            where = f"{flag} {path}: data[{ti}].paragraphs[{pi}]"
            yield ti, pi, str(article.get("title") or f"article {ti}"), str(_need(para, "context", where)), para


def load_squad(corpus: Path, queries: Path | None = None) -> Dataset:
    queries = queries or corpus
    documents: list[EvalDocument] = []
    by_text: dict[str, str] = {}
    warnings: list[str] = []
    for ti, pi, title, context, _ in _squad_paragraphs(corpus, "--corpus"):
        key = strip_ws(context)
        if key in by_text:  # the same paragraph twice: one document
            continue
        doc_id = f"{ti}-{pi}"
        by_text[key] = doc_id
        documents.append(EvalDocument(id=doc_id, title=title, text=context,
                                      metadata={"source": corpus.stem, "category": title}))
    out = []
    unmatched = 0
    for ti, pi, _title, context, para in _squad_paragraphs(queries, "--queries"):
        doc_id = by_text.get(strip_ws(context))
        if doc_id is None:
            unmatched += 1
        for qa in para.get("qas") or []:
            answers = [a.get("text") for a in qa.get("answers") or [] if isinstance(a, dict)]
            out.append(EvalQuery(id=str(qa.get("id") or f"{ti}-{pi}-{len(out)}"), text=str(qa.get("question") or ""),
                                 type=None, gold={"docs": {doc_id: 1}} if doc_id else {}, answer=answers))
    if unmatched:
        warnings.append(f"--queries {queries}: {unmatched} paragraphs are not in the corpus; their questions have no gold")
    return Dataset("squad", documents, out, {"corpus": corpus, "queries": queries}, DOC_TYPES["squad"], warnings)


# --- resolving files ---------------------------------------------------------------------------


def default_data_root() -> Path:
    return settings.path("RAGATE_DATASETS")


def _in_dir(data_dir: Path, names: list[str], what: str, flag: str) -> Path:
    for name in names:
        hits = sorted(p for p in data_dir.glob(name) if p.is_file())
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise DatasetError(f"--data-dir {data_dir}: several {what} files ({', '.join(p.name for p in hits)}); "
                               f"pick one with {flag}")
    raise DatasetError(f"--data-dir {data_dir}: no {what} file ({' or '.join(names)}); pass {flag}")


def load_dataset(name: str, *, data_dir: str | Path | None = None, corpus: str | Path | None = None,
                 queries: str | Path | None = None, qrels: str | Path | None = None) -> Dataset:
    """Load a dataset from explicit files, a folder that stands for them, or the default folder."""
    if name not in DATASETS:
        raise DatasetError(f"--dataset: unknown dataset {name!r} (choose from {', '.join(DATASETS)})")
    if corpus is not None and data_dir is None and Path(corpus).expanduser().is_dir():
        # `--corpus FOLDER`: a folder holding the standard file names stands for the files.
        data_dir, corpus = corpus, None
    corpus_p, queries_p, qrels_p = _file(corpus, "--corpus"), _file(queries, "--queries"), _file(qrels, "--qrels")
    if qrels_p is not None and name != "beir":
        raise DatasetError("--qrels: only the beir dataset has qrels")
    if name == "squad":
        # One SQuAD file holds both the paragraphs and the questions.
        corpus_p = corpus_p or queries_p
        queries_p = queries_p or corpus_p
    needs_dir = corpus_p is None or queries_p is None or (name == "beir" and qrels_p is None)
    d: Path | None = None
    if needs_dir:
        if data_dir is not None:
            d = Path(data_dir).expanduser()
            if not d.is_dir():
                raise DatasetError(f"--data-dir: no such folder {d}; {name} expects {LAYOUTS[name]}")
        else:
            d = default_data_root() / DEFAULT_FOLDERS[name]
            if not d.is_dir():
                raise DatasetError(f"no data folder for {name}: {d} does not exist (pass --data-dir, or --corpus/--queries"
                                   f"{'/--qrels' if name == 'beir' else ''}, or set RAGATE_DATASETS); {name} expects "
                                   f"{LAYOUTS[name]}")

    if name == "multihop-rag":
        corpus_p = corpus_p or _in_dir(d, ["corpus.json"], "corpus", "--corpus")
        queries_p = queries_p or _in_dir(d, ["queries_dev.json", "queries.json", "MultiHopRAG.json", "queries*.json"],
                                         "queries", "--queries")
        return load_multihop(corpus_p, queries_p)
    if name == "beir":
        corpus_p = corpus_p or _in_dir(d, ["corpus.jsonl"], "corpus", "--corpus")
        if queries_p is not None:
            query_files = [queries_p]
        else:
            query_files = sorted(p for p in d.glob("queries*.jsonl") if p.is_file())
            if not query_files:
                raise DatasetError(f"--data-dir {d}: no queries*.jsonl file; pass --queries")
        if qrels_p is None:
            qrels_p = _in_dir(d, ["qrels/test.tsv", "qrels/*.tsv", "*.tsv"], "qrels", "--qrels")
        # The qrels decide which queries count, so several queries files are simply merged.
        return load_beir(corpus_p, query_files, qrels_p)
    # squad
    if corpus_p is None:
        corpus_p = queries_p = _in_dir(d, ["*.json"], "SQuAD .json", "--corpus")
    return load_squad(corpus_p, queries_p)
