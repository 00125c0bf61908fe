#!/usr/bin/env python3
"""Writes the small seed corpus of the GGUF reader fuzzer to fuzz/corpus/gguf.

Seeds: a valid file using every metadata value type (nested arrays included)
and several tensor types, a tokenizer-like file, an empty file, a v2 file, a
file with a custom alignment, and truncations of these at interesting points.
Run from anywhere: python3 fuzz/make_seed_corpus.py
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "gguf")

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
       U64: "<Q", I64: "<q", F64: "<d"}


def s(text):
    b = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(b)) + b


def value(t, v):
    if t == STRING:
        return s(v)
    if t == ARRAY:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(value(et, x) for x in items)
    return struct.pack(FMT[t], v)


def gguf(kvs, tensors, version=3, alignment=32):
    """kvs: [(key, type, value)], tensors: [(name, type_id, dims, bytes)]"""
    out = struct.pack("<IIQQ", 0x46554747, version, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += s(k) + struct.pack("<I", t) + value(t, v)
    offset = 0
    for name, tid, dims, data in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", tid, offset)
        offset += (len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * (-len(out) % alignment)
    for _, _, _, data in tensors:
        out += data + b"\0" * (-len(data) % alignment)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    kvs = [
        ("general.architecture", STRING, "llama"),
        ("a.u8", U8, 200), ("a.i8", I8, -5), ("a.u16", U16, 60000), ("a.i16", I16, -300),
        ("a.u32", U32, 4000000000), ("a.i32", I32, -70000), ("a.f32", F32, 1.5), ("a.bool", BOOL, True),
        ("a.u64", U64, 2**63), ("a.i64", I64, -2**40), ("a.f64", F64, 2.25), ("a.str", STRING, "h\u00e9llo"),
        ("arr.i32", ARRAY, (I32, [1, -2, 3])), ("arr.f32", ARRAY, (F32, [0.5, -1.0])),
        ("arr.str", ARRAY, (STRING, ["a", "bc", ""])), ("arr.bool", ARRAY, (BOOL, [True, False])),
        ("arr.u64", ARRAY, (U64, [1, 2])), ("arr.nested", ARRAY, (ARRAY, [(U8, [1, 2]), (STRING, ["x"])])),
        ("arr.empty", ARRAY, (F64, [])),
    ]
    f32 = struct.pack("<8f", *range(8))
    tensors = [
        ("w.f32", 0, [4, 2], f32),
        ("w.f16", 1, [8], bytes(16)),
        ("w.q4_0", 2, [32, 2], bytes(36)),
        ("w.q8_0", 8, [32], bytes(34)),
        ("w.i32", 26, [3, 1, 1, 1], bytes(12)),
    ]
    files = {
        "all_types.gguf": gguf(kvs, tensors),
        "v2.gguf": gguf(kvs[:3], tensors[:2], version=2),
        "empty.gguf": gguf([], []),
        "align64.gguf": gguf([("general.alignment", U32, 64)] + kvs[:2], tensors[:3], alignment=64),
        "vocab.gguf": gguf([
            ("general.architecture", STRING, "llama"),
            ("tokenizer.ggml.model", STRING, "llama"),
            ("tokenizer.ggml.tokens", ARRAY, (STRING, ["<unk>", "<s>", "</s>", "\u2581a", "b"])),
            ("tokenizer.ggml.scores", ARRAY, (F32, [0.0, 0.0, 0.0, -1.0, -2.0])),
            ("tokenizer.ggml.token_type", ARRAY, (I32, [2, 3, 3, 1, 1])),
        ], []),
    }
    whole = files["all_types.gguf"]
    # The last cut falls inside the last tensor's data (12 bytes, then 20 of padding).
    for cut in (3, 10, 23, 40, 200, len(whole) // 2, len(whole) - 200, len(whole) - 21):
        files["all_types_cut%d.gguf" % cut] = whole[:cut]
    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as fh:
            fh.write(data)
    print("wrote %d seeds to %s" % (len(files), OUT))


if __name__ == "__main__":
    main()
