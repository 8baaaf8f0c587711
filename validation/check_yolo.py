"""Proves networks_zoo.YoloV8 and networks_yolo11.Yolo11 are ultralytics' YOLOv8 and YOLO11
DetectionModels (8.4.190, built from its own yolov8.yaml and yolo11.yaml with random weights): the same parameters in the same order, with the same
names, shapes and requires_grad, the same buffers, and the same training-mode outputs (boxes
and scores) and input gradient for the same weights, at every scale. Needs ultralytics,
which does not install beside torch 2.13's CPU build; it ran in a private venv layered on it
(ultralytics and opencv/pillow with --no-deps, torchvision 0.28 whose C ops do not load, its
_meta_registrations emptied; see the module docstring of networks_zoo.py). Re-run for YOLO11
(ultralytics 8.4.190, opencv-python-headless, pillow, torchvision 0.28.0 with --no-deps; the
private venv sees venv213's torch through a .pth file, as --system-site-packages of a venv made
by a venv's python gives the base interpreter's packages, not the venv's):
    YOLO_OFFLINE=1 VENV/bin/python validation/check_yolo.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from networks_zoo import YoloV8  # noqa: E402
from networks_yolo11 import Yolo11  # noqa: E402
from ultralytics.nn.tasks import DetectionModel  # noqa: E402

V8 = {"n": (0.33, 0.25, 1024), "s": (0.33, 0.50, 1024), "m": (0.67, 0.75, 768),
      "l": (1.00, 1.00, 512), "x": (1.00, 1.25, 512)}
V11 = {"n": (0.50, 0.25, 1024), "s": (0.50, 0.50, 1024), "m": (0.50, 1.00, 512),
       "l": (1.00, 1.00, 512), "x": (1.00, 1.50, 512)}
MODELS = [("yolov8" + s, lambda d=d, w=w, mc=mc: YoloV8(d, w, mc)) for s, (d, w, mc) in V8.items()]
MODELS += [("yolo11" + s, lambda d=d, w=w, mc=mc, s=s: Yolo11(d, w, mc, c3k_all=s in "mlx")) for s, (d, w, mc) in V11.items()]

for name, build in MODELS:
    theirs = DetectionModel(name + ".yaml", verbose=False)
    ours = build()
    tp, op = list(theirs.named_parameters()), list(ours.named_parameters())
    assert [(n, p.shape, p.requires_grad) for n, p in tp] == [(n, p.shape, p.requires_grad) for n, p in op], scale
    assert [(n, b.shape) for n, b in theirs.named_buffers()] == [(n, b.shape) for n, b in ours.named_buffers()], scale
    for m in theirs.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            assert (m.eps, m.momentum) == (0.001, 0.03)
    ours.load_state_dict(theirs.state_dict())
    total = sum(p.numel() for _, p in tp)
    frozen = sum(p.numel() for _, p in tp if not p.requires_grad)
    line = "%s: %d parameters (%d frozen), names, shapes and buffers equal" % (name, total, frozen)
    if name.endswith("n"):
        theirs.train(), ours.train()
        x1 = torch.randn(2, 3, 64, 64, requires_grad=True)
        x2 = x1.detach().clone().requires_grad_(True)
        p = theirs(x1)
        a = torch.cat([p["boxes"], p["scores"]], 1)
        b = ours(x2)
        assert torch.equal(a, b)
        a.mean().backward(), b.mean().backward()
        assert torch.equal(x1.grad, x2.grad)
        line += "; outputs %s and input gradients identical" % (list(b.shape),)
    print(line)
