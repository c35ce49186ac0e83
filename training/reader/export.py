"""The trained reader as ragate ships it: int8 ONNX, its tokenizer, and a manifest with their SHA-256.

    python -m training.reader.export --model ~/.cache/ragate-training/run/model.pt --out graph/providers/reader_files

Writes ``reader-int8.onnx`` (onnxruntime's dynamic quantisation: int8 weights, the word embeddings included),
``tokenizer.json`` and ``manifest.json`` (files and hashes, labels, window length, layers, the training step), and
prints how far the int8 logits are from the float ones on a few real windows.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import torch

from graph.providers.local_models import file_sha256
from training.reader.base_weights import build_tokenizer, read_base_weights
from training.reader.features import MAX_LENGTH, MAX_QUESTION, NLI_LENGTH, STRIDE
from training.reader.model import NLI_LABELS, YESNO_LABELS, Reader

ONNX_NAME = "reader-int8.onnx"
OUTPUTS = ["start_logits", "end_logits", "yesno_logits", "nli_logits"]
SAMPLES = [
    ("Did the Pinterest campaign meet the minimum ROAS?",
     "The Pinterest campaign stayed below the minimum ROAS of 3.0 for the whole quarter."),
    ("Quanto cresceram as vendas no primeiro trimestre?",
     "As vendas totais cresceram 11,1% no primeiro trimestre de 2026, puxadas pela coleção Verão Brisa."),
    ("What was the average refund time after the process changes?",
     "After the process changes, the average refund time fell from 16 to 8 business days."),
]


def export(model_path: Path, out: Path, keep_float: Path | None = None) -> dict:
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    state = torch.load(model_path, weights_only=False)
    base = read_base_weights()
    tokenizer = build_tokenizer(base)
    model = Reader(base.shape, state["layers"])
    model.load_state_dict(state["model"])
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    encodings = [tokenizer.encode(q, p) for q, p in SAMPLES]
    longest = max(len(e.ids) for e in encodings)
    ids = np.full((len(encodings), longest), base.pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)] = e.ids
        mask[row, : len(e.ids)] = 1
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "reader.onnx"
        torch.onnx.export(model, (torch.from_numpy(ids), torch.from_numpy(mask)), str(fp32),
                          input_names=["input_ids", "attention_mask"], output_names=OUTPUTS,
                          dynamic_axes={name: {0: "batch", 1: "tokens"} for name in ["input_ids", "attention_mask"]}
                          | {name: {0: "batch", 1: "tokens"} for name in OUTPUTS[:2]}
                          | {name: {0: "batch"} for name in OUTPUTS[2:]},
                          opset_version=17, dynamo=False)
        target = out / ONNX_NAME
        quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True)
        metadata = {"labels.yesno": ",".join(YESNO_LABELS), "labels.nli": ",".join(NLI_LABELS),
                    "max_length": str(MAX_LENGTH), "layers": str(state["layers"])}
        quantized = onnx.load(str(target))
        for key, value in metadata.items():
            quantized.metadata_props.add(key=key, value=value)
        onnx.save(quantized, str(target))
        feed = {"input_ids": ids, "attention_mask": mask}
        float_out = ort.InferenceSession(str(fp32), providers=["CPUExecutionProvider"]).run(None, feed)
        if keep_float:  # for comparing the two forms on whole sets (not shipped)
            keep_float.write_bytes(fp32.read_bytes())
    int8_out = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"]).run(None, feed)
    token_level = set(OUTPUTS[:2])  # start and end: one logit a token, padding left out
    differences = {name: float(np.abs(a - b)[mask.astype(bool)].mean() if name in token_level
                               else np.abs(a - b).mean())
                   for name, a, b in zip(OUTPUTS, float_out, int8_out)}
    tokenizer.save(str(out / "tokenizer.json"))
    manifest = {
        "model": "ragate reader: multilingual-e5-small (en+pt vocabulary) cut to "
                 f"{state['layers']} layers, span / yes-no / entailment heads",
        "files": {name: {"sha256": file_sha256(out / name), "bytes": (out / name).stat().st_size}
                  for name in (ONNX_NAME, "tokenizer.json")},
        "inputs": ["input_ids", "attention_mask"],
        "outputs": OUTPUTS,
        "labels": {"yesno": list(YESNO_LABELS), "nli": list(NLI_LABELS)},
        "max_length": MAX_LENGTH,
        "stride": STRIDE,
        "max_question": MAX_QUESTION,
        "nli_length": NLI_LENGTH,
        "pad_id": base.pad_id,
        "layers": state["layers"],
        "training_step": state.get("step"),
        "training_total_steps": state.get("total_steps"),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return {"manifest": manifest, "int8_vs_float_mean_abs_logit_difference": differences}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="model.pt written by train.py")
    parser.add_argument("--out", type=Path, required=True, help="folder for the shipped files")
    parser.add_argument("--keep-float", type=Path, help="also write the float ONNX graph here (not shipped)")
    args = parser.parse_args()
    print(json.dumps(export(args.model, args.out, args.keep_float), indent=2))
