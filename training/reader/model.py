"""The reader: one XLM-R-style encoder (multilingual-e5-small, cut to its first layers) and three heads.

- span: a start and an end logit per token; the first token (``<s>``) stands for "no answer" (SQuAD 2.0's
  convention: the null score is start[0] + end[0]).
- yes/no: yes, no, not stated, read off the first token of a (question, passage) window.
- entailment: entails, contradicts, neither, read off the first token of a (passage, claim) pair.

The module runs in PyTorch for training and is exported to ONNX (``export.py``) with the same inputs
(``input_ids``, ``attention_mask``) and the four outputs, so that onnxruntime computes every head in one call.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from training.reader.base_weights import BaseWeights, EncoderShape

YESNO_LABELS = ("yes", "no", "not_stated")
NLI_LABELS = ("entailment", "contradiction", "neutral")


class EncoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int, eps: float, dropout: float):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attention_out = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.ffn_in = nn.Linear(hidden, intermediate)
        self.ffn_out = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.scale = 1.0 / math.sqrt(self.head_dim)

    def forward(self, x: torch.Tensor, mask_bias: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, length, self.heads, self.head_dim).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale + mask_bias
        probs = self.dropout(torch.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).transpose(1, 2).reshape(batch, length, hidden)
        x = self.attention_norm(x + self.dropout(self.attention_out(context)))
        ffn = self.ffn_out(nn.functional.gelu(self.ffn_in(x)))
        return self.output_norm(x + self.dropout(ffn))


class ClassifierHead(nn.Module):
    """RoBERTa's classification head: dense + tanh over the first token, then the labels."""

    def __init__(self, hidden: int, labels: int, dropout: float):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, labels)

    def forward(self, first_token: torch.Tensor) -> torch.Tensor:
        return self.out(self.dropout(torch.tanh(self.dense(self.dropout(first_token)))))


class Reader(nn.Module):
    def __init__(self, shape: EncoderShape, layers: int, dropout: float = 0.1):
        super().__init__()
        self.shape = shape
        self.word = nn.Embedding(shape.vocab, shape.hidden)
        self.position = nn.Embedding(shape.max_positions, shape.hidden)
        self.token_type = nn.Parameter(torch.zeros(shape.hidden))
        self.embedding_norm = nn.LayerNorm(shape.hidden, eps=shape.layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(shape.hidden, shape.heads, shape.intermediate, shape.layer_norm_eps, dropout)
            for _ in range(layers)
        )
        self.span = nn.Linear(shape.hidden, 2)
        self.yesno = ClassifierHead(shape.hidden, len(YESNO_LABELS), dropout)
        self.nli = ClassifierHead(shape.hidden, len(NLI_LABELS), dropout)

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        length = input_ids.shape[1]
        positions = torch.arange(length, device=input_ids.device).unsqueeze(0)
        x = self.word(input_ids) + self.position(positions) + self.token_type
        x = self.dropout(self.embedding_norm(x))
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        return x

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor):
        states = self.encode(input_ids, attention_mask)
        span = self.span(states)
        # Padding can never be an answer's start or end.
        pad_bias = (1.0 - attention_mask.to(span.dtype)) * -10000.0
        start_logits = span[..., 0] + pad_bias
        end_logits = span[..., 1] + pad_bias
        first = states[:, 0]
        return start_logits, end_logits, self.yesno(first), self.nli(first)


def reader_from_base(base: BaseWeights, layers: int, dropout: float = 0.1) -> Reader:
    """A reader whose encoder is the first ``layers`` layers of the base weights; the heads start at random."""
    if not 1 <= layers <= base.shape.layers:
        raise ValueError(f"layers must be 1..{base.shape.layers}, not {layers}")
    model = Reader(base.shape, layers, dropout)
    t = {name: torch.from_numpy(array.copy()) for name, array in base.tensors.items()}
    with torch.no_grad():
        model.word.weight.copy_(t["emb.word"])
        model.position.weight.copy_(t["emb.pos"])
        model.token_type.copy_(t["emb.type"][0])
        model.embedding_norm.weight.copy_(t["emb.ln.w"])
        model.embedding_norm.bias.copy_(t["emb.ln.b"])
        for index, layer in enumerate(model.layers):
            pairs = {
                layer.query: "q",
                layer.key: "k",
                layer.value: "v",
                layer.attention_out: "ao",
                layer.ffn_in: "fi",
                layer.ffn_out: "fo",
            }
            for linear, name in pairs.items():
                linear.weight.copy_(t[f"l{index}.{name}.w"])
                linear.bias.copy_(t[f"l{index}.{name}.b"])
            layer.attention_norm.weight.copy_(t[f"l{index}.aln.w"])
            layer.attention_norm.bias.copy_(t[f"l{index}.aln.b"])
            layer.output_norm.weight.copy_(t[f"l{index}.oln.w"])
            layer.output_norm.bias.copy_(t[f"l{index}.oln.b"])
    return model
