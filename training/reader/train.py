"""Train the reader, in pieces: every run resumes from the last checkpoint and stops by itself at --max-minutes.

    python -m training.reader.train --data ../shared/datasets --work ~/.cache/ragate-training/run --max-minutes 110

The work folder keeps, outside the repository, what a later piece needs: ``checkpoint.pt`` (weights, optimizer,
schedule, step; written every --checkpoint-minutes and at the end) and ``model.pt`` (the weights alone, what
``export.py`` reads). The step log (``log.jsonl``: losses by task, learning rate, tokens a second, seed) is
appended to in the work folder and copied to ``training/reader/runs/`` so that the figures travel with the code.

The data are made afresh each run from the datasets folder and the translation cache, in a fixed order from
--seed, so a resumed run sees the batches the ended one would have seen.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

import torch
from torch.nn import functional as F

from graph.evaluation.reader_sets import (
    ENTAILMENT,
    NO,
    NOT_STATED,
    YES,
    PairExample,
    reader_sets,
)
from training.reader.base_weights import build_tokenizer, read_base_weights
from training.reader.features import NLI_PARTIAL, Featurizer, batches
from training.reader.generate import read_generated
from training.reader.model import NLI_LABELS, reader_from_base
from training.reader.overlap import drop_sick_test_pairs
from training.reader.synthetic import (
    contradiction_pairs,
    entailment_pairs,
    passage_sentences,
    resolve_not_entailment,
    sentence_contradictions,
    yes_no_from_entailment,
)
from training.reader.translate import TranslationCache, make_translations

REPO_RUNS = Path(__file__).resolve().parent / "runs"
YESNO_PASSES = 2


def not_stated_pairs(items: list[PairExample], rng: random.Random, share: float) -> list[PairExample]:
    """A question asked of a passage from another article: the passage does not say (about `share` of items)."""
    out = []
    by_language: dict[str, list[PairExample]] = {}
    for ex in items:
        by_language.setdefault(ex.language, []).append(ex)
    for group in by_language.values():
        for ex in group:
            if rng.random() >= share:
                continue
            other = rng.choice(group)
            if other.second != ex.second:
                out.append(PairExample(f"{ex.id}-unrelated", ex.first, other.second, NOT_STATED, ex.language,
                                       f"{ex.source}-unrelated"))
    return out


def training_data(data: Path, cache: Path, seed: int, tokenizer, asked_share: float = 0.0,
                  english_span_passes: int = 1, changed_sentences: int = 0,
                  generated: Path | None = None) -> dict[str, list]:
    rng = random.Random(seed)
    sets = reader_sets(data)
    made = make_translations(sets, TranslationCache(cache))
    nli = resolve_not_entailment(drop_sick_test_pairs(sets.train_nli + made["nli"], data))
    nli = nli + contradiction_pairs(nli, rng) + entailment_pairs(nli, rng)
    spans = sets.train_spans + made["spans"]
    if changed_sentences:  # a document's own sentences against a value or a direction changed
        nli += sentence_contradictions(passage_sentences(spans, rng, changed_sentences), rng, "passage")
    yesno = sets.train_yesno + made["yesno"]
    # BoolQ is the smallest set for the hardest reading (2,452 questions): each epoch reads it twice.
    yesno = yesno * YESNO_PASSES + not_stated_pairs(yesno, rng, share=0.5)
    if generated:  # yes/no questions a local LLM wrote over the training passages (generate.py), checked there
        yesno += read_generated(generated)
    if asked_share:  # the yes/no head also learns to ask a passage whether it entails a statement
        yesno += yes_no_from_entailment(nli, rng, asked_share)
    spans += [ex for ex in spans if ex.language == "en"] * (english_span_passes - 1)
    featurizer = Featurizer(tokenizer)
    features = featurizer.spans(spans, rng) + featurizer.yesno(yesno) + featurizer.nli(nli)
    counts = {
        "span_examples": len(spans),
        "span_windows": sum(f.task == "span" for f in features),
        "yesno": {label: sum(ex.label == label for ex in yesno) for label in (YES, NO, NOT_STATED)},
        "yesno_asked": sum(ex.source.endswith("-asked") for ex in yesno),
        "yesno_generated": sum(ex.source == "llm-yesno" for ex in yesno),
        "nli": {label: sum(ex.label == label for ex in nli) for label in sorted({ex.label for ex in nli})},
        "nli_synthetic": sum(ex.source.endswith(("-negated", "-self", "-changed", "-same")) for ex in nli),
    }
    return {"features": features, "counts": counts}


def head_loss(task: str, outputs, labels: torch.Tensor) -> torch.Tensor:
    start_logits, end_logits, yesno_logits, nli_logits = outputs
    if task == "span":
        return (F.cross_entropy(start_logits.float(), labels[:, 0]) + F.cross_entropy(end_logits.float(),
                                                                                      labels[:, 1])) / 2
    if task == "yesno":
        return F.cross_entropy(yesno_logits.float(), labels[:, 0])
    log_probs = F.log_softmax(nli_logits.float(), dim=-1)
    target = labels[:, 0]
    full = target < NLI_PARTIAL
    losses = torch.empty_like(target, dtype=log_probs.dtype)
    if full.any():
        losses[full] = -log_probs[full].gather(1, target[full, None])[:, 0]
    if (~full).any():  # "not entailment": contradiction or neutral, whichever the model finds likelier
        not_entailment = [NLI_LABELS.index(label) for label in NLI_LABELS if label != ENTAILMENT]
        losses[~full] = -torch.logsumexp(log_probs[~full][:, not_entailment], dim=-1)
    return losses.mean()


def collate(batch, pad_id: int):
    longest = max(len(f.ids) for f in batch)
    ids = torch.full((len(batch), longest), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), longest), dtype=torch.long)
    for row, f in enumerate(batch):
        ids[row, : len(f.ids)] = torch.tensor(f.ids)
        mask[row, : len(f.ids)] = 1
    labels = torch.tensor([f.label for f in batch], dtype=torch.long)
    return ids, mask, labels


def _save(obj, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--cache", type=Path, help="translations.jsonl (default: beside --work)")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--lr", type=float, default=8e-5)
    parser.add_argument("--head-lr", type=float, default=5e-4)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-minutes", type=float, default=110)
    parser.add_argument("--checkpoint-minutes", type=float, default=15)
    parser.add_argument("--run-name", default="reader")
    parser.add_argument("--asked-share", type=float, default=0.0,
                        help="share of the labelled entailment pairs also asked as yes/no questions (0: none)")
    parser.add_argument("--english-span-passes", type=int, default=1,
                        help="times each epoch reads the English span examples (the smaller language)")
    parser.add_argument("--changed-sentences", type=int, default=0,
                        help="sentences of the span sets' contexts each paired with itself with a value or a word "
                             "changed to its opposite (contradictions); 0: none")
    parser.add_argument("--generated", type=Path,
                        help="yes/no questions written by generate.py (JSON lines) to train on as well")
    parser.add_argument("--init-from", type=Path,
                        help="start from this model.pt (a finished run) instead of the base weights: a second stage "
                             "with a schedule of its own")
    args = parser.parse_args()

    started = time.monotonic()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.work.mkdir(parents=True, exist_ok=True)
    cache = args.cache or args.work.parent / "translations.jsonl"
    log_path = args.work / "log.jsonl"
    REPO_RUNS.mkdir(exist_ok=True)
    repo_log = REPO_RUNS / f"{args.run_name}.jsonl"
    if (args.work / "done.json").is_file():
        print(f"{args.work}: finished already (done.json); remove the folder to train again")
        return

    def log(row: dict) -> None:
        line = json.dumps(row, ensure_ascii=False)
        print(line, flush=True)
        for path in (log_path, repo_log):
            with path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")

    base = read_base_weights()
    tokenizer = build_tokenizer(base)
    data = training_data(args.data, cache, args.seed, tokenizer, args.asked_share, args.english_span_passes,
                         args.changed_sentences, args.generated)
    features = data["features"]
    epoch_batches = [batches(features, random.Random(args.seed * 1000 + e), args.max_tokens)
                     for e in range(int(args.epochs + 0.999))]
    steps_per_epoch = len(epoch_batches[0])
    total_steps = int(steps_per_epoch * args.epochs)

    model = reader_from_base(base, args.layers)
    if args.init_from:
        start = torch.load(args.init_from, weights_only=False)
        if start["layers"] != args.layers:
            raise SystemExit(f"{args.init_from}: {start['layers']} layers, not --layers {args.layers}")
        model.load_state_dict(start["model"])
    heads = [p for n, p in model.named_parameters() if n.startswith(("span.", "yesno.", "nli."))]
    encoder = [p for n, p in model.named_parameters() if not n.startswith(("span.", "yesno.", "nli."))]
    optimizer = torch.optim.AdamW([{"params": encoder, "lr": args.lr}, {"params": heads, "lr": args.head_lr}],
                                  weight_decay=0.01, betas=(0.9, 0.98), eps=1e-6)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / args.warmup) * max(0.0, 1 - step / total_steps))
    step = 0
    checkpoint = args.work / "checkpoint.pt"
    if checkpoint.is_file():
        state = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        step = state["step"]
        if state["total_steps"] != total_steps:
            raise SystemExit(f"{checkpoint}: made for {state['total_steps']} steps, these data and flags give "
                             f"{total_steps}; remove the work folder to start again")
    config = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    log({"event": "start", "step": step, "total_steps": total_steps, "steps_per_epoch": steps_per_epoch,
         "counts": data["counts"], "features": len(features), "config": config,
         "torch": torch.__version__, "time": time.strftime("%Y-%m-%d %H:%M:%S")})

    def save_all(reason: str) -> None:
        _save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
               "step": step, "total_steps": total_steps, "layers": args.layers, "seed": args.seed}, checkpoint)
        _save({"model": model.state_dict(), "layers": args.layers, "step": step, "total_steps": total_steps},
              args.work / "model.pt")
        log({"event": "checkpoint", "reason": reason, "step": step, "minutes": (time.monotonic() - started) / 60})
        if reason == "done":  # what `make reader` checks before the next stage: this run needs no further piece
            (args.work / "done.json").write_text(json.dumps({"step": step, "run_name": args.run_name}) + "\n")

    model.train()
    last_save = time.monotonic()
    window: dict[str, list[float]] = {}
    tokens = 0
    window_start = time.monotonic()
    while step < total_steps:
        if (time.monotonic() - started) / 60 > args.max_minutes:
            save_all("time limit")
            return
        epoch, index = divmod(step, steps_per_epoch)
        batch = epoch_batches[epoch][index]
        task = batch[0].task
        ids, mask, labels = collate(batch, base.pad_id)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            outputs = model(ids, mask)
        loss = head_loss(task, outputs, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        window.setdefault(task, []).append(loss.item())
        tokens += ids.numel()
        if step % 50 == 0 or step == total_steps:
            elapsed = time.monotonic() - window_start
            log({"step": step, "epoch": round(step / steps_per_epoch, 3), "lr": schedule.get_last_lr()[0],
                 "loss": {t: round(sum(v) / len(v), 4) for t, v in window.items()},
                 "tokens_per_s": round(tokens / elapsed), "seed": args.seed})
            window, tokens, window_start = {}, 0, time.monotonic()
        if (time.monotonic() - last_save) / 60 > args.checkpoint_minutes:
            save_all("periodic")
            last_save = time.monotonic()
    save_all("done")


if __name__ == "__main__":
    main()
