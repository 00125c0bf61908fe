#!/usr/bin/env python3
"""Write a tiny gemma3-layout vision projector (mmproj) with random weights.

For tests of image prompts end to end: llama.cpp's clip layout (the keys and
tensor names its loader reads), a small SigLIP-style tower (width 32, one
block, patch 14, 112x112 input -> 8x8 patches -> 4 image tokens after the
4x4 pool) projecting to N_TEXT, the text model's width. Standard library
only (no numpy), seeded, so the same arguments always give the same bytes.

usage: mktinymmproj.py OUT.gguf N_TEXT [--seed S]
"""
import argparse
import random
import struct

T_U32, T_F32, T_BOOL, T_STR, T_ARR = 4, 6, 7, 8, 9


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


def kv_f32s(key, vals):
    return s(key) + struct.pack("<IIQ", T_ARR, T_F32, len(vals)) + struct.pack(f"<{len(vals)}f", *vals)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("n_text", type=int)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    C, FF, HEADS, LAYERS, PATCH, IMAGE = 32, 64, 2, 1, 14, 112
    g = IMAGE // PATCH
    meta = [
        kv("general.architecture", T_STR, "clip"),
        kv("general.type", T_STR, "mmproj"),
        kv("general.file_type", T_U32, 0),
        kv("clip.has_vision_encoder", T_BOOL, True),
        kv("clip.projector_type", T_STR, "gemma3"),
        kv("clip.use_gelu", T_BOOL, True),
        kv("clip.vision.image_size", T_U32, IMAGE),
        kv("clip.vision.patch_size", T_U32, PATCH),
        kv("clip.vision.embedding_length", T_U32, C),
        kv("clip.vision.feed_forward_length", T_U32, FF),
        kv("clip.vision.block_count", T_U32, LAYERS),
        kv("clip.vision.attention.head_count", T_U32, HEADS),
        kv("clip.vision.attention.layer_norm_epsilon", T_F32, 1e-6),
        kv("clip.vision.projection_dim", T_U32, a.n_text),
        kv_f32s("clip.vision.image_mean", [0.5, 0.5, 0.5]),
        kv_f32s("clip.vision.image_std", [0.5, 0.5, 0.5]),
    ]
    # (name, ggml shape, kind): matrices ~ N(0, 1/fan_in), biases ~ N(0, 0.1^2),
    # norm weights ~ 1 + N(0, 0.1^2), positions ~ N(0, 0.5^2) (as llama.cpp's fixtures).
    tensors = [("v.patch_embd.weight", [PATCH, PATCH, 3, C], "m"), ("v.patch_embd.bias", [C], "b"),
               ("v.position_embd.weight", [C, g * g], "p")]
    for il in range(LAYERS):
        b = f"v.blk.{il}."
        for p in ("attn_q", "attn_k", "attn_v", "attn_out"):
            tensors += [(b + p + ".weight", [C, C], "m"), (b + p + ".bias", [C], "b")]
        for n in ("ln1", "ln2"):
            tensors += [(b + n + ".weight", [C], "n"), (b + n + ".bias", [C], "b")]
        tensors += [(b + "ffn_up.weight", [C, FF], "m"), (b + "ffn_up.bias", [FF], "b"),
                    (b + "ffn_down.weight", [FF, C], "m"), (b + "ffn_down.bias", [C], "b")]
    tensors += [("v.post_ln.weight", [C], "n"), ("v.post_ln.bias", [C], "b"),
                ("mm.soft_emb_norm.weight", [C], "n"), ("mm.input_projection.weight", [a.n_text, C], "m")]

    rng = random.Random(a.seed)
    ALIGN = 32
    infos, blobs, off = b"", [], 0
    for name, shape, kind in tensors:
        n = 1
        for d in shape:
            n *= d
        fan_in = shape[0] if name != "mm.input_projection.weight" else shape[1]
        if name == "v.patch_embd.weight":
            fan_in = PATCH * PATCH * 3
        sd = {"m": (1.0 / fan_in) ** 0.5, "b": 0.1, "n": 0.1, "p": 0.5}[kind]
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
    print(f"{a.out}: gemma3 mmproj, width {C}, {LAYERS} block, {IMAGE}x{IMAGE} -> 4 tokens of {a.n_text}")


if __name__ == "__main__":
    main()
