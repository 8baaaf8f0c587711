"""Lets networks.py import where torchvision is not installed (torch 2.13's CPU venv): a
stand-in module whose model builders raise ModuleNotFoundError, so that the networks that need
torchvision are skipped and the others run. Import this before networks."""
import sys
import types

try:
    import torchvision  # noqa: F401
except ImportError:
    def _needs_torchvision(*args, **kwargs):
        raise ModuleNotFoundError("torchvision")
    sys.modules["torchvision"] = types.SimpleNamespace(
        models=types.SimpleNamespace(resnet18=_needs_torchvision, resnet50=_needs_torchvision, vgg16=_needs_torchvision))
