"""Yes/no questions written by a local LLM over the training passages: more of what BoolQ has too little of.

    local-llm start                 # ../shared/tools/local-llm: an OpenAI-compatible server on 127.0.0.1:8088
    python -m training.reader.generate --data ../shared/datasets --out ~/.cache/ragate-training/generated-yesno.jsonl \
        --max-minutes 100

For each passage of the span sets' training part (never a held-aside article), in its own language, the LLM is
asked for one question the passage answers "yes" and one it answers "no", each with the sentence that decides it.
A pair is kept only when that sentence is really in the passage (after spacing and case are folded) and the
question does not simply copy it; the reasons for what was dropped are counted in the log line. The output is
appended to, one JSON line a passage (kept or not), so a run ended by --max-minutes or by the machine resumes
where it stopped. train.py reads it with --generated.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

from graph.evaluation.reader_sets import NO, YES, PairExample, reader_sets

PROMPTS = {
    "en": (
        "Read the passage and write two yes/no questions about it, as a curious reader would ask them: one whose "
        "answer, according to the passage, is YES, and one whose answer is NO (the passage says otherwise: a "
        "different number, the opposite, another person or place). Do not copy a sentence: rephrase. For each, "
        "copy the one sentence of the passage that decides the answer.\n"
        'Answer with JSON only: {"yes_question": "...", "yes_sentence": "...", "no_question": "...", '
        '"no_sentence": "..."}\n\nPassage:\n'
    ),
    "pt": (
        "Leia o texto e escreva duas perguntas de sim ou não sobre ele, em português, como um leitor curioso "
        "perguntaria: uma cuja resposta, segundo o texto, é SIM, e outra cuja resposta é NÃO (o texto diz outra "
        "coisa: outro número, o contrário, outra pessoa ou lugar). Não copie uma frase: reformule. Para cada uma, "
        "copie a frase do texto que decide a resposta.\n"
        'Responda só com JSON: {"yes_question": "...", "yes_sentence": "...", "no_question": "...", '
        '"no_sentence": "..."}\n\nTexto:\n'
    ),
}
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


def _fold(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def passage_id(context: str) -> str:
    return hashlib.sha256(context.encode("utf-8")).hexdigest()[:16]


def training_passages(data: Path, seed: int) -> list[tuple[str, str]]:
    """(passage, language) of the span sets' training part, each once, in an order fixed by `seed`."""
    sets = reader_sets(data)
    seen: dict[str, str] = {}
    for ex in sets.train_spans:
        if 40 <= len(ex.context.split()) <= 220:
            seen.setdefault(ex.context, ex.language)
    passages = sorted(seen.items())
    random.Random(seed).shuffle(passages)
    return passages


def checked_questions(reply: str, passage: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The (question, yes|no) pairs of an LLM reply that hold up, and why the others did not."""
    match = re.search(r"\{.*\}", reply, re.S)
    if not match:
        return [], ["no JSON"]
    try:
        fields = json.loads(match.group(0))
    except json.JSONDecodeError:
        return [], ["bad JSON"]
    if not isinstance(fields, dict):
        return [], ["bad JSON"]
    kept, dropped = [], []
    folded_passage = _fold(passage)
    for label in (YES, NO):
        question, sentence = fields.get(f"{label}_question"), fields.get(f"{label}_sentence")
        if not isinstance(question, str) or not isinstance(sentence, str) or not question.strip().endswith("?"):
            dropped.append(f"{label}: no question")
            continue
        if len(_fold(sentence)) < 15 or _fold(sentence).rstrip(".") not in folded_passage:
            dropped.append(f"{label}: sentence not in the passage")
            continue
        q_words, s_words = set(_WORD.findall(_fold(question))), set(_WORD.findall(_fold(sentence)))
        if len(q_words) < 4:
            dropped.append(f"{label}: too short")
            continue
        if len(q_words & s_words) / len(q_words) > 0.9:
            dropped.append(f"{label}: copies the sentence")
            continue
        kept.append((question.strip(), label))
    return kept, dropped


def ask(url: str, model: str, prompt: str, timeout: float = 120) -> str:
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}], "temperature": 0.4,
                       "max_tokens": 220}).encode()
    request = urllib.request.Request(f"{url.rstrip('/')}/chat/completions", body,
                                     {"Content-Type": "application/json", "Authorization": "Bearer local"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())["choices"][0]["message"]["content"]


def read_generated(path: Path) -> list[PairExample]:
    """The kept questions of a generate.py output, as yes/no training pairs."""
    out = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            for k, (question, label) in enumerate(row.get("kept", [])):
                out.append(PairExample(f"llm-{row['id']}-{k}", question, row["passage"], label, row["language"],
                                       "llm-yesno"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="JSON lines, appended to (resumes)")
    parser.add_argument("--url", default="http://127.0.0.1:8088/v1")
    parser.add_argument("--model", default="local")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--max-minutes", type=float, default=100)
    parser.add_argument("--limit", type=int, default=20000, help="passages at most")
    args = parser.parse_args()
    started = time.monotonic()
    done = set()
    if args.out.is_file():
        done = {json.loads(line)["id"] for line in args.out.open(encoding="utf-8")}
    passages = [p for p in training_passages(args.data, args.seed)[: args.limit] if passage_id(p[0]) not in done]
    print(json.dumps({"event": "start", "done": len(done), "to_do": len(passages)}), flush=True)
    counts: dict[str, int] = {}
    for number, (passage, language) in enumerate(passages, 1):
        if (time.monotonic() - started) / 60 > args.max_minutes:
            break
        try:
            reply = ask(args.url, args.model, PROMPTS[language] + passage)
        except (urllib.error.URLError, TimeoutError, KeyError, ValueError) as exc:
            raise SystemExit(f"{args.url}: {exc} (is the local LLM running? local-llm start)") from None
        kept, dropped = checked_questions(reply, passage)
        for reason in dropped:
            counts[reason] = counts.get(reason, 0) + 1
        counts["kept"] = counts.get("kept", 0) + len(kept)
        with args.out.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"id": passage_id(passage), "language": language, "passage": passage,
                                  "kept": kept, "dropped": dropped, "reply": reply}, ensure_ascii=False) + "\n")
        if number % 25 == 0:
            print(json.dumps({"passages": number, "minutes": round((time.monotonic() - started) / 60, 1),
                              **counts}, ensure_ascii=False), flush=True)
    print(json.dumps({"event": "stop", **counts}, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
