"""Proves networks_zoo.YoloV8 is ultralytics' YOLOv8 DetectionModel (8.4.190, built from its
own yolov8.yaml with random weights): the same parameters in the same order, with the same
names, shapes and requires_grad, the same buffers, and the same training-mode outputs (boxes
and scores) and input gradient for the same weights, at every scale. Needs ultralytics,
which does not install beside torch 2.13's CPU build; it ran in a private venv layered on it
(ultralytics and opencv/pillow with --no-deps, torchvision 0.28 whose C ops do not load, its
_meta_registrations emptied; see the module docstring of networks_zoo.py):
    YOLO_OFFLINE=1 VENV/bin/python validation/check_yolo.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from networks_zoo import YoloV8  # noqa: E402
from ultralytics.nn.tasks import DetectionModel  # noqa: E402

SCALES = {"n": (0.33, 0.25, 1024), "s": (0.33, 0.50, 1024), "m": (0.67, 0.75, 768),
          "l": (1.00, 1.00, 512), "x": (1.00, 1.25, 512)}

for scale, (d, w, mc) in SCALES.items():
    theirs = DetectionModel("yolov8%s.yaml" % scale, verbose=False)
    ours = YoloV8(d, w, mc)
    tp, op = list(theirs.named_parameters()), list(ours.named_parameters())
    assert [(n, p.shape, p.requires_grad) for n, p in tp] == [(n, p.shape, p.requires_grad) for n, p in op], scale
    assert [(n, b.shape) for n, b in theirs.named_buffers()] == [(n, b.shape) for n, b in ours.named_buffers()], scale
    for m in theirs.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            assert (m.eps, m.momentum) == (0.001, 0.03)
    ours.load_state_dict(theirs.state_dict())
    total = sum(p.numel() for _, p in tp)
    frozen = sum(p.numel() for _, p in tp if not p.requires_grad)
    line = "yolov8%s: %d parameters (%d frozen), names, shapes and buffers equal" % (scale, total, frozen)
    if scale == "n":
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
