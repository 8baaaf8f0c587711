"""torchinfo's summary of torchvision's ResNet-50, the figure nnmem is compared with.

    python3 bench/torchinfo_resnet50.py            one summary, as a whole process would run it
    python3 bench/torchinfo_resnet50.py --repeat 20  in process: the model built once, the
                                                   summary timed 20 times (best and median)

Needs torch, torchvision and torchinfo (pip install torchinfo). Batch 1, 224×224, as
`nnmem estimate examples/resnet50.yaml` (whose default batch is 1).
"""
import argparse
import statistics
import time

import torch
import torchinfo
import torchvision

parser = argparse.ArgumentParser()
parser.add_argument("--repeat", type=int, default=0)
args = parser.parse_args()

model = torchvision.models.resnet50()
if args.repeat == 0:
    print(torchinfo.summary(model, input_size=(1, 3, 224, 224), verbose=0).total_params)
else:
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        torchinfo.summary(model, input_size=(1, 3, 224, 224), verbose=0)
        times.append((time.perf_counter() - start) * 1000)
    print(f"torchinfo.summary(resnet50), in process  best {min(times):9.3f} ms   median {statistics.median(times):9.3f} ms"
          f"   ({args.repeat} runs, torch {torch.__version__}, torchinfo {torchinfo.__version__})")
