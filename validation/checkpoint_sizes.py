#!/usr/bin/env python3
"""Checkpoint sizes on disk, measured, for nnmem's `checkpoint` model to be checked against.

For every network of networks.NETWORKS this builds the model, runs one training step at its
first batch size (with each of Adam(lr=1e-3), SGD(lr=1e-3, momentum=0.9), SGD(lr=1e-3),
AdamW(lr=1e-3) and Adam(lr=1e-3, amsgrad=True), over the trainable parameters), and measures
the bytes of

  * torch.save(model.state_dict(), "NETWORK.pt")                       -> "state_dict"
  * torch.save({"model": model.state_dict(),
                "optimizer": opt.state_dict()}, "NETWORK.pt")          -> "adam", "momentum", …
  * safetensors.torch.save_file(model.state_dict(), "NETWORK.safetensors") -> "safetensors"
  * torch.save(opt.state_dict(), "optimizer.pt"), the optimizer saved beside safetensors
    weights (as Hugging Face's Trainer does)                          -> "adam_optimizer", …

and, for each torch file, its data.pkl record (the pickle), so that a difference can be placed.
The zip's folder is the file's stem, which every record repeats: the fixture names the stem.

    /work/venv213/bin/python validation/checkpoint_sizes.py       # torch 2.13
    VENV/bin/python validation/checkpoint_sizes.py                 # torch 1.13 (Debian's) + safetensors

Each run adds or replaces its torch version's entry in validation/checkpoints.json; with a
comma-separated list of networks as its argument, only theirs within it.
networks.py imports torchvision at the top; where torchvision is not installed (torch 2.13's
CPU venv), a stand-in lets the other networks import, and those that need it are skipped.
"""
import json
import os
import sys
import zipfile

import torch

import safetensors.torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from per_network import measure_networks, only_argument, save_safetensors  # noqa: E402
from measure import loss_terms, make_target, total_loss  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoints.json")


def one_step(net, model, opt):
    """One training step as validation/measure.py runs it (its inputs, targets and loss), so
    that every parameter the step trains has its optimizer state."""
    batch = net.batches[0]
    if net.input_dtype == "int64":
        x = torch.randint(0, net.vocab, (batch, *net.input_shape))
    else:
        x = torch.randn(batch, *net.input_shape, dtype=getattr(torch, net.input_dtype))
    forward = (lambda ys=None: net.call(model, x, ys) if ys is not None else net.call(model, x)) if net.call \
        else (lambda: model(x))
    with torch.no_grad():
        outs = forward()
    oshapes = [list(o.shape) for o in (outs if isinstance(outs, tuple) else (outs,))]
    del outs
    terms = loss_terms(net)
    ys = [make_target(kind, shape) for (kind, _), shape in zip(terms, oshapes)]
    loss = forward(ys).loss if net.own_loss else total_loss(terms, forward(), ys, batch)
    opt.zero_grad()
    loss.backward()
    opt.step()


def torch_file(path, obj):
    torch.save(obj, path)
    with zipfile.ZipFile(path) as z:
        pickle = next(i.file_size for i in z.infolist() if i.filename.endswith("/data.pkl"))
    return {"bytes": os.path.getsize(path), "pickle_bytes": pickle}


def measure(name, net, folder):
    torch.manual_seed(0)
    model = net.build()
    model.train()
    path = os.path.join(folder, name + ".pt")
    result = {"file_stem": name, "state_dict": torch_file(path, model.state_dict())}
    st = os.path.join(folder, name + ".safetensors")
    save_safetensors(model, st)
    result["safetensors"] = {"bytes": os.path.getsize(st)}
    for optimizer, make in (("adam", lambda params: torch.optim.Adam(params, lr=1e-3)),
                            ("momentum", lambda params: torch.optim.SGD(params, lr=1e-3, momentum=0.9)),
                            ("sgd", lambda params: torch.optim.SGD(params, lr=1e-3)),
                            ("adamw", lambda params: torch.optim.AdamW(params, lr=1e-3)),
                            ("amsgrad", lambda params: torch.optim.Adam(params, lr=1e-3, amsgrad=True))):
        torch.manual_seed(0)
        model = net.build()
        model.train()
        opt = make([p for p in model.parameters() if p.requires_grad])
        one_step(net, model, opt)
        result[optimizer] = torch_file(path, {"model": model.state_dict(), "optimizer": opt.state_dict()})
        result[optimizer + "_optimizer"] = torch_file(os.path.join(folder, "optimizer.pt"), opt.state_dict())
    return result


def main():
    only = only_argument()
    fixture = json.load(open(FIXTURE)) if os.path.exists(FIXTURE) else {}
    runs = dict(fixture.get(torch.__version__, {}).get("networks", {})) if only else {}
    measure_networks(measure, lambda r: "state_dict %12d  adam %12d  momentum %12d  safetensors %12d" % (
        r["state_dict"]["bytes"], r["adam"]["bytes"], r["momentum"]["bytes"], r["safetensors"]["bytes"]), only, runs)
    fixture[torch.__version__] = {"torch_version": torch.__version__, "safetensors_version": safetensors.__version__,
                                  "networks": runs}
    with open(FIXTURE, "w") as f:
        json.dump(fixture, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
