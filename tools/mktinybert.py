#!/usr/bin/env python3
"""Write a tiny bert-layout encoder GGUF with random weights.

For end-to-end tests of /v1/embeddings and /v1/rerank: llama.cpp's bert
keys and tensor names (token_types, position_embd, token_embd_norm, Q/K/V
with biases, attn_output_norm, GELU feed-forward, layer_output_norm), a
WordPiece vocab ([PAD] [UNK] [CLS] [SEP] [MASK], letters, a few words, in
llama.cpp's layout), pooling mean (--pooling) and with --reranker the classifier head
cls / cls.output and pooling rank. Standard library only, seeded: the same
arguments always give the same bytes.

usage: mktinybert.py OUT.gguf [--reranker] [--seed S] [--no-pooling-type]
"""
import argparse
import random
import struct

T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR = 4, 5, 6, 7, 8, 9


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, t, v):
    out = s(key) + struct.pack("<I", t)
    if t == T_U32:
        out += struct.pack("<I", v)
    elif t == T_F32:
        out += struct.pack("<f", v)
    elif t == T_BOOL:
        out += struct.pack("<B", 1 if v else 0)
    elif t == T_STR:
        out += s(v)
    return out


def kv_arr(key, et, vals):
    out = s(key) + struct.pack("<IIQ", T_ARR, et, len(vals))
    if et == T_STR:
        return out + b"".join(s(v) for v in vals)
    return out + struct.pack(f"<{len(vals)}i", *vals)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--reranker", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-pooling-type", action="store_true", help="omit bert.pooling_type (llama.cpp: pooling none)")
    a = ap.parse_args()
    E, FF, HEADS, LAYERS, CTX = 64, 128, 4, 2, 512
    letters = "abcdefghijklmnopqrstuvwxyz"
    # As llama.cpp's converter writes WordPiece vocabs: word-initial pieces
    # with the U+2581 marker, continuation pieces ("##x" in BERT's files) bare.
    m = "\u2581"
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [m + c for c in letters] + list(letters)
    tokens += [m + w for w in ["the", "cat", "dog", "sat", "on", "mat", "hello", "world", "paris", "capital",
                               "of", "france", "is", "what", ".", ",", "?", "!"]]
    types = [3, 2, 3, 3, 3] + [1] * (len(tokens) - 5)
    V = len(tokens)
    arch = "bert"
    meta = [
        kv("general.architecture", T_STR, arch),
        kv("general.name", T_STR, "tiny-bert-reranker" if a.reranker else "tiny-bert"),
        kv(f"{arch}.context_length", T_U32, CTX),
        kv(f"{arch}.embedding_length", T_U32, E),
        kv(f"{arch}.block_count", T_U32, LAYERS),
        kv(f"{arch}.feed_forward_length", T_U32, FF),
        kv(f"{arch}.attention.head_count", T_U32, HEADS),
        kv(f"{arch}.attention.layer_norm_epsilon", T_F32, 1e-12),
        kv(f"{arch}.attention.causal", T_BOOL, False),
    ] + ([] if a.no_pooling_type else [kv(f"{arch}.pooling_type", T_U32, 4 if a.reranker else 1)]) + [
        kv("tokenizer.ggml.model", T_STR, "bert"),
        kv_arr("tokenizer.ggml.tokens", T_STR, tokens),
        kv_arr("tokenizer.ggml.token_type", T_I32, types),
        kv("tokenizer.ggml.token_type_count", T_U32, 2),
        kv("tokenizer.ggml.padding_token_id", T_U32, 0),
        kv("tokenizer.ggml.unknown_token_id", T_U32, 1),
        kv("tokenizer.ggml.bos_token_id", T_U32, 2),
        kv("tokenizer.ggml.seperator_token_id", T_U32, 3),  # sic, llama.cpp's key
        kv("tokenizer.ggml.mask_token_id", T_U32, 4),
    ]
    # (name, ggml shape, kind): matrices ~ N(0, 1/fan_in), biases ~ N(0, 0.1^2),
    # norm weights ~ 1 + N(0, 0.1^2), embeddings ~ N(0, 0.5^2).
    tensors = [("token_embd.weight", [E, V], "e"), ("token_types.weight", [E, 2], "e"),
               ("position_embd.weight", [E, CTX], "e"),
               ("token_embd_norm.weight", [E], "n"), ("token_embd_norm.bias", [E], "b")]
    for il in range(LAYERS):
        b = f"blk.{il}."
        for p in ("attn_q", "attn_k", "attn_v", "attn_output"):
            tensors += [(b + p + ".weight", [E, E], "m"), (b + p + ".bias", [E], "b")]
        tensors += [(b + "attn_output_norm.weight", [E], "n"), (b + "attn_output_norm.bias", [E], "b"),
                    (b + "ffn_up.weight", [E, FF], "m"), (b + "ffn_up.bias", [FF], "b"),
                    (b + "ffn_down.weight", [FF, E], "m"), (b + "ffn_down.bias", [E], "b"),
                    (b + "layer_output_norm.weight", [E], "n"), (b + "layer_output_norm.bias", [E], "b")]
    if a.reranker:
        tensors += [("cls.weight", [E, E], "m"), ("cls.bias", [E], "b"),
                    ("cls.output.weight", [E, 1], "m"), ("cls.output.bias", [1], "b")]

    rng = random.Random(a.seed)
    ALIGN = 32
    infos, blobs, off = b"", [], 0
    for name, shape, kind in tensors:
        n = 1
        for d in shape:
            n *= d
        sd = {"m": (1.0 / shape[0]) ** 0.5, "b": 0.1, "n": 0.1, "e": 0.5}[kind]
        base = 1.0 if kind == "n" else 0.0
        data = struct.pack(f"<{n}f", *[base + rng.gauss(0.0, sd) for _ in range(n)])
        infos += s(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape)
        infos += struct.pack("<IQ", 0, off)
        blobs.append((off, data))
        off += (len(data) + ALIGN - 1) // ALIGN * ALIGN
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta)) + b"".join(meta) + infos
    with open(a.out, "wb") as f:
        f.write(head)
        f.write(b"\0" * ((-len(head)) % ALIGN))
        start = f.tell()
        for o, data in blobs:
            f.seek(start + o)
            f.write(data)
        f.truncate(start + off)
    print(f"{a.out}: bert, width {E}, {LAYERS} layers, vocab {V}" + (", reranker head" if a.reranker else ""))


if __name__ == "__main__":
    main()
