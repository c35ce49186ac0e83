"""Generate a labelled answer-relevance set: grounded, cited answers that do or do not answer the question.

Benchmark tooling for the judge's answer relevance (issue 18). Every answer is faithful (label 1: each sentence is
copied from the context chunk it cites), so groundedness cannot tell them apart; what differs is whether the
answer addresses the question. For each source question, one pair:

- relevant (`relevant: 1`): the gold evidence — MultiHop-RAG's evidence facts, each cited to the passage it
  comes from; FaQuAD's sentence(s) holding the gold answer span, cited to their chunk;
- irrelevant (`relevant: 0`): as many near-miss sentences — from passages of other articles (MultiHop-RAG) or
  other paragraphs (FaQuAD) that share the question's content words but hold neither the gold evidence nor the
  gold answer, the ones sharing the most question words (ties broken by a seeded hash), one per passage.

Both answers of a pair see the same context (the gold passages and the near-miss ones, shuffled), so only the
answer differs. A passage is the cited sentence(s) with their neighbours in the article paragraph, up to about
90 words (MultiHop-RAG), or the FaQuAD chunks of bench/make_groundedness_set.py. FaQuAD answers may open with the
same lead phrase in both answers of a pair ("Segundo o texto, ...").

Split (field `split`): a seeded hash of the question's group puts it in `tune` (about half) or `heldout`;
thresholds are set on `tune`, figures reported on `heldout`. The group is the question for MultiHop-RAG and the
gold paragraph for FaQuAD (questions on one paragraph share their context, so they stay on one side).

    python bench/make_relevance_set.py --dataset multihop-rag --split tune --limit 200 --out /tmp/rel/mh-tune.jsonl
    python bench/make_relevance_set.py --dataset faquad --split heldout --out /tmp/rel/fq-heldout.jsonl
    ragate eval groundedness --input /tmp/rel/fq-heldout.jsonl --summary-only

Sources (read from --datasets DIR, default $RAGATE_DATASETS or ../shared/datasets; nothing is copied into the
project): MultiHop-RAG dev (`multihop_rag/queries_dev.json` + `corpus.json`, English; null queries skipped) and
FaQuAD (`faquad/train.json`, Portuguese). Output: JSONL with id, question, context [{doc_id, text}], answer,
label (always 1), relevant (1 / 0), language, source_id, split. `--limit` counts questions after the split
filter, in a seeded order. Same arguments -> byte-identical output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_groundedness_set as gs  # the sibling script: sentences, chunks, rendering, datasets

SPLITS = ("tune", "heldout")
WINDOW_WORDS = 90  # a MultiHop-RAG passage: the cited sentence(s) and their neighbours, up to about this many words
MAX_SENTENCE_WORDS = 60  # longer "sentences" are lists or run-ons, not claims


@dataclass(frozen=True)
class Pair:
    """One question's two answers over one shared context."""

    source_id: str
    question: str
    language: str
    group: str  # what the split is drawn by
    context: list[gs.Chunk]
    relevant: list[gs.Claim]
    irrelevant: list[gs.Claim]


@dataclass(frozen=True)
class Sentence:
    """A near-miss candidate: one sentence of a passage, with the question words it may share."""

    group: str  # article url / paragraph key: one near miss per group, none from the gold ones
    passage: int  # index of the paragraph it belongs to, in the dataset's paragraph list
    index: int  # its position among that paragraph's sentences
    text: str
    words: frozenset[str]


def split_of(group: str, seed: int) -> str:
    """`tune` or `heldout`, by a seeded hash of the question's group (stable whatever --limit is)."""
    return SPLITS[int(hashlib.sha1(f"{seed}:split:{group}".encode()).hexdigest()[:8], 16) % 2]


# A sentence end inside a claim ("... Nov. 24, and Monday, Nov. 27"): a reader may split the claim there, and
# the first half would carry no citation.
_INNER_BREAK = re.compile(r"[.!?…][\"”’)\]]*\s+[\"“(\[]?[A-ZÀ-Ý0-9]")


def cited_whole(s: str) -> bool:
    """A sentence that reads as one claim with its citation at the end: no inner sentence break, no brackets."""
    return not _INNER_BREAK.search(s.rstrip(" .!?…\"”’)")) and "[" not in s and "]" not in s


def claim_sentence(s: str) -> bool:
    """A sentence that can stand as a near-miss claim: a statement of reasonable length, no boilerplate."""
    return (5 <= len(s.split()) <= MAX_SENTENCE_WORDS and gs._good_claim_sentence(s) and "?" not in s
            and not gs.BOILERPLATE.search(s) and cited_whole(s))


class NearMisses:
    """Every candidate sentence of a dataset, indexed by its content words."""

    def __init__(self, sentences: list[Sentence], seed: int):
        self.sentences = sentences
        self.seed = seed
        self.postings: dict[str, list[int]] = defaultdict(list)
        for i, s in enumerate(sentences):
            for w in s.words:
                self.postings[w].append(i)

    def pick(self, question: str, k: int, allowed: Callable[[Sentence], bool]) -> list[Sentence]:
        """The `k` allowed sentences sharing the most content words with the question, one per group
        (ties: a seeded hash, so the choice does not follow the dataset's order)."""
        shared = Counter(i for w in gs.content(question) for i in self.postings.get(w, ()))
        def tie(i: int) -> str:
            return hashlib.sha1(f"{self.seed}:{question}:{i}".encode()).hexdigest()

        out: list[Sentence] = []
        used: set[str] = set()
        for i in sorted(shared, key=lambda i: (-shared[i], tie(i))):
            s = self.sentences[i]
            if s.group in used or not allowed(s):
                continue
            used.add(s.group)
            out.append(s)
            if len(out) == k:
                break
        return out


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _window(sentences: list[str], first: int, last: int, core: str | None = None) -> str:
    """Sentences first..last of a paragraph (or `core` in their place) with their neighbours, alternately
    after and before, until the passage holds about WINDOW_WORDS words."""
    parts = [core if core is not None else " ".join(sentences[first:last + 1])]
    n = len(parts[0].split())
    before, after = first - 1, last + 1
    while n < WINDOW_WORDS and (before >= 0 or after < len(sentences)):
        if after < len(sentences):
            parts.append(sentences[after])
            n += len(sentences[after].split())
            after += 1
        if n < WINDOW_WORDS and before >= 0:
            parts.insert(0, sentences[before])
            n += len(sentences[before].split())
            before -= 1
    return re.sub(r"\s+", " ", " ".join(parts)).strip()


# --- MultiHop-RAG ----------------------------------------------------------------------------------------------


def prepare_multihop(folder: Path, seed: int) -> list[Pair]:
    """A pair per non-null dev query, in a seeded order."""
    queries = gs._read_json(folder / "queries_dev.json")
    corpus = gs._read_json(folder / "corpus.json")
    paragraphs: list[tuple[str, list[str]]] = []  # (url, sentences)
    by_url: dict[str, list[int]] = defaultdict(list)
    for art in corpus:
        for para in (art.get("body") or "").split("\n"):
            sents = [re.sub(r"\s+", " ", s).strip() for s in gs.split_sentences(para.strip())]
            if sents:
                by_url[art["url"]].append(len(paragraphs))
                paragraphs.append((art["url"], sents))
    candidates = [Sentence(url, p, i, s, frozenset(gs.content(s)))
                  for p, (url, sents) in enumerate(paragraphs) for i, s in enumerate(sents) if claim_sentence(s)]
    pool = NearMisses(candidates, seed)
    order = [q for q in queries if q.get("evidence_list")]
    random.Random(seed).shuffle(order)
    pairs = []
    for q in order:
        pair = _multihop_pair(q, paragraphs, by_url, pool, seed)
        if pair:
            pairs.append(pair)
    return pairs


def _fact_passage(fact: str, url: str, paragraphs: list, by_url: dict) -> str:
    """The fact with its neighbours in the article paragraph that holds it (the fact alone if none does)."""
    key = _squash(fact)
    for p in by_url.get(url, ()):
        sents = paragraphs[p][1]
        inside = [i for i, s in enumerate(sents) if _squash(s) in key or key in _squash(s)]
        if inside:
            return _window(sents, inside[0], inside[-1], core=fact)
    return fact


def _multihop_pair(q: dict, paragraphs: list, by_url: dict, pool: NearMisses, seed: int) -> Pair | None:
    source_id = "mhq-" + gs.short_hash(q["query"])
    rng = random.Random(f"{seed}:{source_id}:relevance")
    evidence = q["evidence_list"]
    seen: Counter = Counter()
    context, relevant = [], []
    for e in evidence:
        fact = re.sub(r"\s+", " ", e["fact"]).strip()
        seen[e["url"]] += 1
        doc_id = "mh-" + gs.short_hash(e["url"] if seen[e["url"]] == 1 else f"{e['url']}#{seen[e['url']]}")
        context.append(gs.Chunk(doc_id, _fact_passage(fact, e["url"], paragraphs, by_url)))
        for sentence in gs.split_sentences(fact):  # each sentence of the fact cited
            if not cited_whole(sentence):
                return None
            relevant.append(gs.Claim(sentence, doc_id))
    gold_urls = {e["url"] for e in evidence}
    facts = [_squash(re.sub(r"\s+", " ", e["fact"])) for e in evidence]
    answer = q["answer"].strip().rstrip(".").strip()
    names_answer = answer.lower() not in ("yes", "no") and "|" not in answer

    def allowed(s: Sentence) -> bool:
        if s.group in gold_urls or any(_squash(s.text) in f or f in _squash(s.text) for f in facts):
            return False
        return not (names_answer and gs.contains_term(s.text, answer))

    misses = pool.pick(q["query"], len(relevant), allowed)
    if len(misses) < len(relevant):
        return None
    irrelevant = []
    for s in misses:
        doc_id = "mh-" + gs.short_hash(f"{s.group}#near-miss")
        sents = paragraphs[s.passage][1]
        context.append(gs.Chunk(doc_id, _window(sents, s.index, s.index)))
        irrelevant.append(gs.Claim(s.text, doc_id))
    rng.shuffle(context)
    return Pair(source_id, q["query"], "en", source_id, context, relevant, irrelevant)


# --- FaQuAD -----------------------------------------------------------------------------------------------------


def prepare_faquad(path: Path, seed: int) -> list[Pair]:
    """A pair per answered question, in a seeded order."""
    raw = gs._read_json(path)
    articles = raw["data"] if isinstance(raw, dict) else raw
    paragraphs = [(ai, pi, p["context"]) for ai, art in enumerate(articles) for pi, p in enumerate(art["paragraphs"])]
    keys = [f"faquad:{ai}:{pi}" for ai, pi, _t in paragraphs]
    candidates = []
    for n, (_ai, _pi, text) in enumerate(paragraphs):
        for i, (a, b) in enumerate(gs.sentence_spans(text)):
            s = re.sub(r"\s+", " ", text[a:b]).strip()
            if claim_sentence(s):
                candidates.append(Sentence(keys[n], n, i, s, frozenset(gs.content(s))))
    pool = NearMisses(candidates, seed)
    items = [(n, qa) for n, (ai, pi, _t) in enumerate(paragraphs) for qa in articles[ai]["paragraphs"][pi]["qas"]
             if qa.get("answers")]
    random.Random(seed).shuffle(items)
    pairs = []
    for n, qa in items:
        pair = _faquad_pair(n, qa, paragraphs, keys, pool, seed)
        if pair:
            pairs.append(pair)
    return pairs


def _chunk_holding(chunks: list, a: int, b: int) -> gs.Chunk:
    return next(c for ca, cb, c in chunks if ca <= a and b <= cb)


def _with_lead(claim: gs.Claim, lead: str) -> gs.Claim:
    """The claim opened by a lead phrase ("Segundo o texto, o TCC ..."): an article or pronoun loses its capital."""
    if not lead:
        return claim
    text = claim.text
    if text.split()[0] in gs.PT_LOWER_FIRST:
        text = text[0].lower() + text[1:]
    return gs.Claim(lead + text, claim.doc_id, prefix=len(lead))


def _faquad_pair(n: int, qa: dict, paragraphs: list, keys: list, pool: NearMisses, seed: int) -> Pair | None:
    ai, pi, text = paragraphs[n]
    source_id = "fq:" + str(qa.get("id") or gs.short_hash(qa["question"]))
    rng = random.Random(f"{seed}:{source_id}:relevance")
    ans = qa["answers"][0]
    span = gs.answer_span(text, ans)
    if span is None:
        return None
    start, end = span
    chunks = gs._faquad_chunks(ai, pi, text, random.Random(f"{seed}:{keys[n]}:chunks"))
    relevant = []
    for a, b in gs.sentence_spans(text):
        if a < end and start < b:
            sentence = re.sub(r"\s+", " ", text[a:b]).strip()
            if not cited_whole(sentence):
                return None
            relevant.append(gs.Claim(sentence, _chunk_holding(chunks, a, b).doc_id))
    if not relevant:
        return None
    answer = ans["text"].strip()
    misses = pool.pick(qa["question"], len(relevant),
                       lambda s: s.passage != n and not gs.contains_term(s.text, answer))
    if len(misses) < len(relevant):
        return None
    context = {c.doc_id: c for _a, _b, c in chunks}
    irrelevant = []
    for s in misses:
        m_ai, m_pi, m_text = paragraphs[s.passage]
        m_chunks = gs._faquad_chunks(m_ai, m_pi, m_text, random.Random(f"{seed}:{keys[s.passage]}:chunks"))
        a, b = gs.sentence_spans(m_text)[s.index]
        holder = _chunk_holding(m_chunks, a, b)
        context[holder.doc_id] = holder
        irrelevant.append(gs.Claim(s.text, holder.doc_id))
    lead = rng.choice(gs.PT_LEADS + ("",) * 4)
    relevant[0], irrelevant[0] = _with_lead(relevant[0], lead), _with_lead(irrelevant[0], lead)
    chunks_ = [gs.Chunk(c.doc_id, re.sub(r"\s+", " ", c.text)) for c in context.values()]
    rng.shuffle(chunks_)
    return Pair(source_id, qa["question"], "pt", keys[n], chunks_, relevant, irrelevant)


# --- output -----------------------------------------------------------------------------------------------------


def rows_of(pairs: Iterable[Pair], split: str, limit: int | None, seed: int) -> list[dict]:
    """Two rows (relevant, irrelevant) per pair in `split` ("all", "tune" or "heldout"), the first `limit` pairs."""
    rows = []
    taken = 0
    for p in pairs:
        part = split_of(p.group, seed)
        if split != "all" and part != split:
            continue
        if limit and taken >= limit:
            break
        taken += 1
        context = [{"doc_id": c.doc_id, "text": c.text} for c in p.context]
        for relevant, claims in ((1, p.relevant), (0, p.irrelevant)):
            rows.append({"id": f"{p.source_id}:{'relevant' if relevant else 'irrelevant'}", "question": p.question,
                         "context": context, "answer": gs.render(claims), "label": 1, "relevant": relevant,
                         "language": p.language, "source_id": p.source_id, "split": part})
    return rows


def build(dataset: str, datasets_dir: Path, limit: int | None = None, seed: int = 13, split: str = "all") -> list[dict]:
    rows = []
    for name in (("multihop-rag", "faquad") if dataset == "all" else (dataset,)):
        folder_name, files = gs.DATASETS[name]
        folder = datasets_dir / folder_name
        for f in files:
            if not (folder / f).is_file():
                raise gs.DatasetMissing(f"{folder / f} not found")
        pairs = (prepare_multihop(folder, seed) if name == "multihop-rag"
                 else prepare_faquad(folder / "train.json", seed))
        rows += rows_of(pairs, split, limit, seed)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", required=True, choices=sorted(gs.DATASETS) + ["all"])
    p.add_argument("--out", required=True, type=Path, help="JSONL file to write")
    p.add_argument("--datasets", type=Path, default=None,
                   help="folder holding multihop_rag/ and faquad/ (default: $RAGATE_DATASETS or ../shared/datasets)")
    p.add_argument("--split", choices=("all",) + SPLITS, default="all",
                   help="tune: the part thresholds are set on; heldout: the part figures are reported on")
    p.add_argument("--limit", type=int, default=None, help="number of questions (per dataset, after --split)")
    p.add_argument("--seed", type=int, default=13)
    args = p.parse_args(argv)
    try:
        rows = build(args.dataset, args.datasets or gs.default_datasets(), args.limit, args.seed, args.split)
    except gs.DatasetMissing as exc:
        print(f"error: {exc} (pass --datasets DIR or set RAGATE_DATASETS)", file=sys.stderr)
        return 2
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        print(f"error: cannot read the {args.dataset} dataset: {exc!r}", file=sys.stderr)
        return 2
    gs.write_rows(rows, args.out)
    counts = Counter((r["language"], r["split"], r["relevant"]) for r in rows)
    print(f"wrote {len(rows)} items from {len({r['source_id'] for r in rows})} questions to {args.out}")
    for (lang, part, rel), v in sorted(counts.items()):
        print(f"  {lang} {part} {'relevant' if rel else 'irrelevant'}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
