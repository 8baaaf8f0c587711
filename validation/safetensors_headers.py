#!/usr/bin/env python3
"""safetensors headers, measured, for `nnmem inspect` to be checked against.

For every network of networks.NETWORKS this builds the model, writes
safetensors.torch.save_file(model.state_dict(), "NETWORK.safetensors") (save_model where the
model ties parameters, per_network.save_safetensors) and records the file's
size, its header (the JSON text after the 8 bytes of length, exactly as written) and what the
safetensors library itself reads back with safe_open: the tensors' names, shapes and dtypes in
its order, their elements and bytes. The test writes each header in front of zeros of the same
length and checks that nnmem reads the same counts, and that the network's spec names every
tensor as PyTorch does.

    /work/venv213/bin/python validation/safetensors_headers.py    # torch 2.13, safetensors 0.8

Writes validation/safetensors_headers.json; with a comma-separated list of networks as its
argument, replaces only theirs in it.
"""
import json
import os
import struct
import sys

import torch

import safetensors  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from per_network import measure_networks, only_argument, save_safetensors  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "safetensors_headers.json")


def measure(name, net, folder):
    torch.manual_seed(0)
    model = net.build()
    path = os.path.join(folder, name + ".safetensors")
    save_safetensors(model, path)
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = f.read(n).decode("utf-8")
    tensors = []
    with safetensors.safe_open(path, framework="pt") as f:
        for key in f.keys():
            t = f.get_slice(key)
            shape = list(t.get_shape())
            numel = 1
            for d in shape:
                numel *= d
            tensors.append({"name": key, "dtype": t.get_dtype(), "shape": shape, "elements": numel})
    by_dtype = {}
    for t, v in zip(tensors, (model.state_dict()[t["name"]] for t in tensors)):
        d = by_dtype.setdefault(t["dtype"], {"tensors": 0, "elements": 0, "bytes": 0})
        d["tensors"] += 1
        d["elements"] += t["elements"]
        d["bytes"] += v.numel() * v.element_size()
    return {"file_bytes": os.path.getsize(path), "header": header, "tensors": tensors, "by_dtype": by_dtype}


def main():
    only = only_argument()
    runs = json.load(open(FIXTURE))["networks"] if only and os.path.exists(FIXTURE) else {}
    measure_networks(measure, lambda r: "%4d tensors  header %7d  file %12d" % (
        len(r["tensors"]), len(r["header"]), r["file_bytes"]), only, runs)
    with open(FIXTURE, "w") as f:
        json.dump({"torch_version": torch.__version__, "safetensors_version": safetensors.__version__, "networks": runs},
                  f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
