"""What the per-network measuring scripts (checkpoint_sizes.py, safetensors_headers.py) share:
writing a model's safetensors file as its library allows, and the loop over networks.NETWORKS."""
import os
import sys
import tempfile

import safetensors.torch
import torch

import torchvision_standin  # noqa: F401  (before networks)
from networks import NETWORKS


def save_safetensors(model, path):
    """safetensors.torch.save_file(model.state_dict(), path); for a model with tied parameters,
    which save_file refuses, save_model, as its error says: it keeps the first name of each
    shared tensor in sorted order and records each dropped name in the header's __metadata__."""
    try:
        safetensors.torch.save_file(model.state_dict(), path)
    except RuntimeError:
        safetensors.torch.save_model(model, path)


def measured(name):
    """Whether the network is a validation network of this torch version: it has step fixtures
    (validation/fixtures/torch-X.Y/NAME.json); networks.py also defines variants never measured."""
    version = ".".join(torch.__version__.split(".")[:2])
    return os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "torch-" + version,
                                       name + ".json"))


def measure_networks(measure, line, only=None, runs=None):
    """measure(name, net, folder) for every validation network of this torch version (or those in
    `only`), into `runs` (a new dict by default); a network whose model needs a module this Python
    lacks is skipped, said so. line(result) is what to print beside the network's name."""
    runs = {} if runs is None else runs
    with tempfile.TemporaryDirectory() as folder:
        for name, net in NETWORKS.items():
            if (only and name not in only) or not measured(name):
                continue
            try:
                runs[name] = measure(name, net, folder)
            except ModuleNotFoundError as e:
                print("%-18s skipped (%s)" % (name, e), flush=True)
                continue
            print("%-18s %s" % (name, line(runs[name])), flush=True)
    return runs


def only_argument():
    """The networks named by the first argument (comma-separated), or None for all."""
    return sys.argv[1].split(",") if len(sys.argv) > 1 else None
