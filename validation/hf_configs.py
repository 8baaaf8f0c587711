#!/usr/bin/env python3
"""Builds each Hugging Face config under examples/hf/ with `transformers` (random weights, no
download; on the meta device, so a 7B model allocates nothing) and records what `nnmem estimate
CONFIG` must match: the parameter count (tied weights once, as model.parameters() yields them)
and, for the small configs, every state_dict tensor's name and shape.

    /work/venv213/bin/python validation/hf_configs.py [--out validation/hf_configs.json]

Each config is built as its architectures[0]; the extra (config, architecture) pairs below build
it as another head class too (bert-base-uncased's file says BertForMaskedLM; its published
109,482,240 is BertModel's; roberta-base's 124,645,632 RobertaModel's).
"""
import argparse
import json
import os
import sys

import torch
import transformers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HF = os.path.join(ROOT, "examples", "hf")
EXTRA = [("bert-base-uncased", "BertModel"), ("bert-base-uncased", "BertForPreTraining"), ("tiny-bert", "BertForMaskedLM"),
         ("tiny-bert", "BertForPreTraining"), ("roberta-base", "RobertaModel"), ("tiny-roberta", "RobertaForMaskedLM")]
SMALL = 10_000_000  # state_dicts are recorded below this many parameters


def build(name, architecture):
    with open(os.path.join(HF, name, "config.json")) as f:
        values = json.load(f)
    config = transformers.AutoConfig.for_model(**values)
    with torch.device("meta"):
        model = getattr(transformers, architecture)(config)
    params = sum(p.numel() for p in model.parameters())
    entry = {"config": "examples/hf/%s/config.json" % name, "architecture": architecture, "parameters": params}
    if params < SMALL:
        entry["state_dict"] = [[k, list(v.shape)] for k, v in model.state_dict().items()]
    return entry


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(ROOT, "validation", "hf_configs.json"))
    args = parser.parse_args()
    entries = []
    for name in sorted(os.listdir(HF)):
        with open(os.path.join(HF, name, "config.json")) as f:
            architecture = json.load(f)["architectures"][0]
        entries.append(build(name, architecture))
    entries += [build(name, architecture) for name, architecture in EXTRA]
    for e in entries:
        print("%-50s %-28s %15s" % (e["config"], e["architecture"], format(e["parameters"], ",")), file=sys.stderr)
    out = {"torch": torch.__version__, "transformers": transformers.__version__, "models": entries}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
