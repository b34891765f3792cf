#!/usr/bin/env python3
"""Read a partrain checkpoint with nothing but json + numpy: it is a standard safetensors file.

usage: read_checkpoint.py FILE [--values]
Prints each tensor's name, dtype and shape (and with --values its first values), then the
metadata (partrain stores the optimizer state as JSON under "partrain.optimizer").
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4", "U8": "u1", "BOOL": "?",
          "F16": "<f2", "I16": "<i2", "I8": "i1", "U16": "<u2", "U32": "<u4", "U64": "<u8"}


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = memoryview(blob)[8 + n:]
    tensors = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        if e["dtype"] == "BF16":  # numpy has no bfloat16: the top half of a float32
            bits = np.frombuffer(data[begin:end], dtype="<u2").astype("<u4") << 16
            arr = bits.view("<f4")
        elif e["dtype"] in DTYPES:
            arr = np.frombuffer(data[begin:end], dtype=DTYPES[e["dtype"]])
        else:
            raise SystemExit(f"{path}: tensor '{name}' has dtype {e['dtype']}, which this reader "
                             f"does not know ({', '.join(sorted(DTYPES))}, BF16)")
        tensors[name] = arr.reshape(e["shape"])
    return tensors, meta


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    tensors, meta = read(sys.argv[1])
    for name in sorted(tensors):
        t = tensors[name]
        line = f"{name}\t{t.dtype}\t{list(t.shape)}"
        if "--values" in sys.argv:
            line += "\t" + " ".join(repr(v.item()) for v in t.reshape(-1)[:4])
        print(line)
    for k in sorted(meta):
        print(f"meta {k} = {meta[k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
