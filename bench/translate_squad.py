"""Translate the questions of a SQuAD-format file with an OpenAI-compatible chat model, for the
cross-lingual evaluation (English questions over Portuguese paragraphs).

Benchmark tooling: the translated file is written outside the project (it is derived from the
dataset, which is never committed) and keeps every paragraph unchanged, so
`ragate eval retrieval --dataset squad --corpus ORIGINAL --queries TRANSLATED` reuses the original's
collection and gold paragraphs. Translations are appended to a cache as they come, so an
interrupted run resumes where it stopped.

    ../shared/tools/local-llm install && ../shared/tools/local-llm start
    python bench/translate_squad.py ../shared/datasets/faquad/train.json /tmp/faquad-en.json \
        --base-url http://127.0.0.1:8088/v1 --model local --limit 300
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

PROMPT = ("Translate this Brazilian Portuguese question into English. Keep names, acronyms and numbers as they are. "
          "Answer with the English question only, nothing else.\n\nQuestion: {question}")


def translate(llm, question: str) -> str:
    text = llm.invoke(PROMPT.format(question=question)).content.strip()
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    for prefix in ("English:", "Translation:", "Question:"):
        if line.lower().startswith(prefix.lower()):
            line = line[len(prefix):].strip()
    return line.strip('"“” ')


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", type=Path, help="SQuAD-format JSON (e.g. faquad/train.json)")
    p.add_argument("target", type=Path, help="where to write the translated SQuAD-format JSON")
    p.add_argument("--base-url", default="http://127.0.0.1:8088/v1")
    p.add_argument("--model", default="local")
    p.add_argument("--api-key", default="local")
    p.add_argument("--limit", type=int, help="translate a random sample of N questions (seed 13); the others are left out")
    p.add_argument("--original-out", type=Path,
                   help="also write the same questions untranslated (the same-language reference on the same sample)")
    args = p.parse_args(argv)

    from langchain_openai import ChatOpenAI
    from tqdm import tqdm

    raw = json.loads(args.source.read_text(encoding="utf-8"))
    qas = [qa for art in raw["data"] for para in art["paragraphs"] for qa in para["qas"]]
    chosen = {qa["id"] for qa in (random.Random(13).sample(qas, args.limit) if args.limit else qas)}
    cache_path = args.target.with_suffix(".cache.jsonl")
    cache: dict[str, str] = {}
    if cache_path.exists():
        for line in cache_path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            cache[row["id"]] = row["en"]
    todo = [qa for qa in qas if qa["id"] in chosen and qa["id"] not in cache]
    if todo:  # everything cached: no model needed
        llm = ChatOpenAI(base_url=args.base_url, model=args.model, api_key=args.api_key, temperature=0,
                         max_tokens=96, timeout=120)
    with cache_path.open("a", encoding="utf-8") as fh:
        for qa in tqdm(todo, desc="translating", unit="q"):
            en = translate(llm, qa["question"])
            if not en:
                print(f"empty translation for {qa['id']}: kept out", file=sys.stderr)
                continue
            cache[qa["id"]] = en
            fh.write(json.dumps({"id": qa["id"], "pt": qa["question"], "en": en}, ensure_ascii=False) + "\n")
            fh.flush()
    original = json.loads(json.dumps(raw))
    for art, art_original in zip(raw["data"], original["data"]):
        for para, para_original in zip(art["paragraphs"], art_original["paragraphs"]):
            para["qas"] = [{**qa, "question": cache[qa["id"]]} for qa in para["qas"] if qa["id"] in cache]
            para_original["qas"] = [qa for qa in para_original["qas"] if qa["id"] in cache]
    args.target.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    if args.original_out:
        args.original_out.write_text(json.dumps(original, ensure_ascii=False), encoding="utf-8")
    print(f"wrote {args.target}: {sum(len(p['qas']) for a in raw['data'] for p in a['paragraphs'])} translated questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
