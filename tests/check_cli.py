#!/usr/bin/env python3
"""What the command line promises beyond the library: exit codes (2 when the step does not fit),
the spec from standard input, every default shown by --help, formats that parse, the answer
before the table.

    python3 tests/check_cli.py NNMEM_BINARY

Run from the repository root. Plain Python 3 standard library. Prints one line per check that
fails and "N passed, N failed"; exits 1 if any failed.
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

NNMEM = sys.argv[1]
passed, failed = 0, 0


def run(*args, stdin=None):
    p = subprocess.run([NNMEM, *args], input=stdin, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def check(what, ok):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


# fit: the answer, not the table; exit 2 when nothing fits; --table adds the estimate.
code, out, _ = run("fit", "examples/mlp.yaml", "--budget", "24MiB")
check("fit exits 0 when a batch fits", code == 0)
check("fit answers mlp in 24 MiB with 1,411", "Largest batch that fits in 24.00 MiB (25,165,824 bytes): 1,411\n" in out)
check("fit prints no table by default", "Layer (type)" not in out)
code, out, _ = run("fit", "examples/vgg16.yaml", "--budget", "100MiB")
check("fit exits 2 when nothing fits", code == 2 and out.count("No batch fits in 100.00 MiB") == 1)
code, out, _ = run("fit", "examples/resnet18.yaml", "--budget", "8GiB", "--headroom", "10%", "--multiple-of", "8", "--table")
check("fit --headroom --multiple-of --table", code == 0 and "Largest multiple of 8 that fits in 8.00 GiB (8,589,934,592 bytes) "
      "less 819.19 MiB headroom" in out and "Layer (type)" in out)
code, out, _ = run("fit", "examples/resnet18.yaml", "--budget", "8GiB", "--format", "json")
fit = json.loads(out)
check("fit --format json", code == 0 and fit["fit"]["batch"] > 0 and fit["estimate"]["options"]["batch"] == fit["fit"]["batch"])
# fit with tensor and pipeline parallelism: the micro-batch per GPU of the most loaded stage.
tp_pp = ["--gpus", "4", "--tp", "2", "--pp", "2", "--sequence-parallel", "--grad-accum", "4", "--set", "seq_len=64", "--set", "num_hidden_layers=4"]
code, out, _ = run("fit", "examples/llama.yaml", "--budget", "40GiB", "--format", "json", *tp_pp)
fit = json.loads(out)
check("fit --tp --pp --format json", code == 0 and fit["fit"]["micro_batch"] > 0 and fit["model_parallel"]["sequence_parallel"] and
      fit["model_parallel"]["stages"][0]["estimate"]["options"]["batch"] == fit["fit"]["micro_batch"])
code, out, _ = run("fit", "examples/llama.yaml", "--budget", "1GiB", *tp_pp)
check("fit --tp --pp exits 2 when no micro-batch fits", code == 2 and "No micro-batch per GPU fits in 1.00 GiB" in out)
code, out, _ = run("compare", "examples/llama.yaml", "--variant", "short:--set seq_len=32", "--variant", "long:--set seq_len=64",
                   "--budget", "40GiB", "--gpus", "4", "--tp", "2", "--pp", "2", "--sequence-parallel", "--set", "num_hidden_layers=4")
check("compare --tp --pp: per GPU, a column each", code == 0 and "per GPU, the most loaded stage's, modelled" in out and
      "short" in out and "long" in out and "largest micro-batch in 40.00 GiB" in out)

# estimate: the answer first; --budget's verdict and exit code.
code, out, _ = run("estimate", "examples/resnet18.yaml", "--batch", "32", "--budget", "2GiB")
lines = out.split("\n")
check("estimate puts the answer first", code == 0 and lines[0].startswith("resnet18, batch 32: peak ") and
      "the device holds" in lines[0] and lines[1].startswith("Budget 2.00 GiB (2,147,483,648 bytes): fits, with"))
code, out, _ = run("estimate", "examples/resnet18.yaml", "--batch", "32", "--budget", "2GiB", "--format", "json", "--no-timeline")
v = json.loads(out)["verdict"]
check("estimate --budget: the verdict in JSON", code == 0 and v["fits"] and v["needed_bytes"] == 1224736768 and v["budget_bytes"] == 2 << 30)
code, out, _ = run("estimate", "examples/resnet18.yaml", "--batch", "32", "--budget", "512MiB", "--summary")
check("estimate --budget exits 2 when it does not fit", code == 2 and "does not fit" in out and "Layer (type)" not in out)

# layers TYPE: what a version's CPU kernels cannot do in bfloat16 (TorchProfile::cpu_bfloat16_gaps)
code, out, _ = run("layers", "LayerNorm")
check("layers LayerNorm: 1.13's CPU bfloat16 gap", code == 0 and
      "PyTorch 1.13 on the CPU: layer_norm refuses a bfloat16 input beside float32 weights (under autocast)\n" in out)
code, out, _ = run("layers", "AvgPool3d")
check("layers AvgPool3d: both versions' gaps", code == 0 and
      "PyTorch 2.13 on the CPU: avg_pool3d has no bfloat16 kernel\n" in out and
      "PyTorch 1.13 on the CPU: avg_pool3d" in out)
code, out, _ = run("layers", "ReLU")
check("layers ReLU: 1.13's float16 gap only", code == 0 and
      out.count("on the CPU") == 1 and "PyTorch 1.13 on the CPU: relu has no float16 kernel\n" in out)
code, out, _ = run("layers", "Flatten")
check("layers Flatten: no gap", code == 0 and "on the CPU" not in out)

# A long cycle: GPT-2 at batch 2 under --zero 2 repeats from iteration 487 in a cycle of 714,
# past the replay's old cap of 1,000 iterations (reported then as "still changing").
code, out, _ = run("estimate", "examples/gpt2.yaml", "--batch", "2", "--zero", "2", "--format", "json")
a = json.loads(out)["cuda_allocator"] if code == 0 else {}
check("estimate gpt2 --zero 2 --batch 2: the replay settles after 1,200 iterations",
      a.get("converged") is True and a.get("steady_from_iteration") == 487 and a.get("period") == 714 and
      a.get("iterations") == 1200 and a.get("max_reserved_bytes") == 7642021888)

# Formats parse.
code, out, _ = run("estimate", "examples/resnet18.yaml", "--format", "csv")
rows = list(csv.reader(io.StringIO(out)))
check("estimate --format csv", code == 0 and rows[0][0] == "Layer (type)" and len(rows) == 1 + 69)
code, out, _ = run("estimate", "examples/resnet18.yaml", "--format", "markdown", "--depth", "1")
check("estimate --format markdown --depth 1", code == 0 and "| layer1 (14 layers) |" in out)
code, out, _ = run("estimate", "examples/mlp.yaml", "--format", "json", "--set", "hidden=64", "--input", "pixels=[100]", "--no-timeline")
j = json.loads(out)
check("estimate JSON records --set/--input, drops the timeline", j["load"]["set"] == {"hidden": "64"} and
      j["load"]["input"] == {"pixels": "[100]"} and j["load"]["variables"] == {"hidden": 64} and "timeline" not in j)

# The spec from standard input.
spec = open("examples/mlp.yaml").read()
code, out, _ = run("check", "-", stdin=spec)
check("check - reads standard input", code == 0 and out == "-: ok (6 layers, 535,818 parameters)\n")
code, _, err = run("estimate", "-", stdin="inputs: {x: [4]}\nlayers:\n  - {type: Linaer}\n")
check("errors in standard input are located there", code == 1 and err.startswith("<stdin>:3:12: error: unknown layer type 'Linaer'"))

# Pictures that parse as XML, one series per memory kind; a trace that is trace-event JSON.
def svg_series(path):
    import xml.etree.ElementTree as ET
    root = ET.parse(path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    return [p.find(ns + "title").text for p in root.iter(ns + "polygon") if p.find(ns + "title") is not None]


with tempfile.TemporaryDirectory() as tmp:
    timeline, layers, trace = (os.path.join(tmp, n) for n in ("timeline.svg", "layers.svg", "trace.json"))
    code, out, err = run("estimate", "examples/resnet18.yaml", "--batch", "8", "--plot", timeline, "--plot", layers,
                         "--trace", trace, "--summary")
    check("estimate --plot/--trace write their files", code == 0 and err.count("nnmem: wrote ") == 3)
    check("the timeline SVG: a series per kind present", svg_series(timeline) == [
        "parameters", "buffers", "optimizer state", "gradients", "input + target", "activations kept",
        "activation gradients, temporaries"])
    check("the layers SVG parses", "layer" in open(layers).read() and svg_series(layers) == [])
    t = json.load(open(trace))
    events = t["traceEvents"]
    check("trace: counters, phases and layers", {e["ph"] for e in events} == {"M", "C", "X"} and
          all(isinstance(e["ts"], int) and e["pid"] == 1 for e in events if e["ph"] != "M") and
          all(e["dur"] >= 1 for e in events if e["ph"] == "X") and
          max(sum(e["args"].values()) for e in events if e["ph"] == "C") == t["otherData"]["peak_bytes"])

# The sweep: an SVG with a series per component, a formula that reproduces every point.
with tempfile.TemporaryDirectory() as tmp:
    out_svg = os.path.join(tmp, "out.svg")
    code, out, err = run("sweep", "examples/resnet50.yaml", "--vary", "batch=1,2,4,8,16,32,64", "--plot", out_svg, "--format", "json")
    s = json.loads(out)
    series = svg_series(out_svg)
    kinds = [k for k in ["parameters", "buffers", "optimizer_state", "gradients", "inputs", "activations", "weight_copies",
                         "transients"] if any(p["peak_breakdown"][k] for p in s["points"])]
    check("sweep --plot: one series per component", code == 0 and len(series) == len(kinds) == 7)
    within = all(abs(p["peak_bytes"] - sum(t["coefficient"] * float(p["values"][0]) ** t["powers"][0] for t in s["fit"]["terms"]))
                 <= s["fit"]["max_residual"] for p in s["points"])
    check("sweep: the formula reproduces every point within its residual", within and len(s["points"]) == 7)
    code, out, _ = run("sweep", "examples/mlp.yaml", "--vary", "hidden=64,128,256", "--vary", "batch=1..64", "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    check("sweep over two variables: the grid", code == 0 and rows[0][:2] == ["hidden", "batch"] and len(rows) == 1 + 3 * 7)
    # With --tp/--pp every point is the most loaded stage's rank: the figures estimate gives with the same flags.
    mp_svg = os.path.join(tmp, "mp.svg")
    code, out, err = run("sweep", "examples/llama.yaml", "--vary", "batch=1,2,3", "--plot", mp_svg, "--format", "json", *tp_pp)
    s = json.loads(out) if code == 0 else {"points": []}
    _, est_out, _ = run("estimate", "examples/llama.yaml", "--micro-batch", "2", "--format", "json", *tp_pp)
    e = json.loads(est_out)["model_parallel"]
    worst = e["stages"][e["most_loaded"]]
    at2 = [p for p in s["points"] if p["values"] == ["2"]]
    check("sweep --tp --pp: a point is estimate's most loaded stage at that micro-batch",
          code == 0 and s["model_parallel"]["tp"] == 2 and s["model_parallel"]["pp"] == 2 and s["model_parallel"]["modelled"] and
          len(at2) == 1 and at2[0]["peak_bytes"] == worst["peak_bytes"] == e["peak_bytes_per_gpu"] and
          at2[0]["stage"] == worst["index"] and at2[0]["in_flight"] == worst["in_flight"] and
          at2[0]["param_bytes"] + at2[0]["grad_bytes"] + at2[0]["optimizer_state_bytes"] == worst["state_bytes"] and
          sum(at2[0]["peak_breakdown"].values()) == worst["peak_bytes"])
    check("sweep --tp --pp: a formula, and the SVG's series per component",
          code == 0 and s["fit"] is not None and s["fit"]["max_residual"] < 1 << 20 and len(svg_series(mp_svg)) >= 4)
    code, out, _ = run("sweep", "examples/llama.yaml", "--vary", "batch=1,2", "--format", "csv", *tp_pp)
    rows = list(csv.reader(io.StringIO(out)))
    check("sweep --tp --pp --format csv: the stage and its micro-batches in flight",
          code == 0 and "stage" in rows[0] and "in flight" in rows[0] and len(rows) == 3 and
          rows[2][rows[0].index("peak")] == str(worst["peak_bytes"]))
    code, out, _ = run("sweep", "examples/llama.yaml", "--vary", "batch=1,2", "--format", "markdown", *tp_pp)
    check("sweep --tp --pp --format markdown: labelled per GPU, modelled",
          code == 0 and out.startswith("## ") and "per GPU, the most loaded stage's, modelled" in out and "| stage |" in out)

# compare: columns that are the estimates, deltas against the first.
code, out, _ = run("compare", "examples/resnet18.yaml", "examples/resnet50.yaml", "--batch", "32", "--budget", "24GiB",
                   "--format", "json")
c = json.loads(out)
e18 = json.loads(run("estimate", "examples/resnet18.yaml", "--batch", "32", "--format", "json", "--no-timeline")[1])["totals"]
e50 = json.loads(run("estimate", "examples/resnet50.yaml", "--batch", "32", "--format", "json", "--no-timeline")[1])["totals"]
f50 = json.loads(run("fit", "examples/resnet50.yaml", "--budget", "24GiB", "--format", "json")[1])["fit"]["batch"]
v18, v50 = c["columns"][0]["values"], c["columns"][1]["values"]
check("compare: each column is the estimate", code == 0 and all(v18[k] == e18[k] and v50[k] == e50[k] for k in
      ["params", "macs", "param_bytes", "optimizer_state_bytes", "saved_bytes", "peak_bytes", "device_bytes"]))
check("compare: the largest batch is fit's", v50["largest_batch"] == f50)
check("compare: deltas against the first column", all(c["deltas"][0]["values"][k] == v50[k] - v18[k] for k in c["deltas"][0]["values"]))
code, out, _ = run("compare", "examples/mlp.yaml", "--variant", "small:--set", "hidden=256", "--variant", "big:--set hidden=1024",
                   "--format", "csv")
rows = list(csv.reader(io.StringIO(out)))
check("compare --variant, as two words or one", code == 0 and rows[0] == ["", "small", "big", "vs small"] and
      rows[2][1:3] == ["235146", "1333770"])
code, _, err = run("compare", "examples/mlp.yaml", "--variant", "small:--sett hidden=256", "--variant", "b:--batch 2")
check("compare: a bad variant says what it expected", code == 1 and "variant 'small': expected --set, --input or --batch, found '--sett'" in err)
code, _, err = run("compare", "examples/mlp.yaml")
check("compare: one column is refused", code == 1 and "needs two columns" in err)

# inspect: a safetensors header (written here: 8 bytes of length, the JSON, zeros), exit 2 on differences.
with tempfile.TemporaryDirectory() as folder:
    header = json.dumps({"__metadata__": {"format": "pt"},
                         "fc1.weight": {"dtype": "F32", "shape": [512, 784], "data_offsets": [0, 1605632]},
                         "fc1.bias": {"dtype": "F32", "shape": [512], "data_offsets": [1605632, 1607680]}}).encode()
    path = os.path.join(folder, "m.safetensors")
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header + bytes(1607680))
    code, out, _ = run("inspect", path)
    check("inspect reads the header", code == 0 and "2 tensors, 401,920 elements" in out and "Metadata: format=pt" in out)
    code, out, _ = run("inspect", path, "--spec", "examples/mlp.yaml", "--format", "json")
    j = json.loads(out)
    check("inspect --spec: exit 2 and every difference", code == 2 and not j["against"]["matches"] and
          len(j["against"]["differences"]) == 4 and j["by_dtype"][0] == {"dtype": "F32", "tensors": 2, "elements": 401920, "bytes": 1607680})
    with open(path, "r+b") as f:
        f.truncate(100)
    code, _, err = run("inspect", path)
    check("inspect: a truncated file is a located error", code == 1 and err.startswith(path + ":1:1: error: the header is"))

# ZeRO and FSDP: per-rank figures, the strategy in the JSON; sharding over one GPU is warned about.
code, out, err = run("estimate", "examples/mlp.yaml", "--gpus", "4", "--zero", "3", "--format", "json", "--no-timeline")
j = json.loads(out) if code == 0 else {}
check("estimate --zero 3: the JSON says which strategy, over how many ranks",
      code == 0 and j["options"]["parallel"]["strategy"] == "zero3" and j["options"]["parallel"]["world_size"] == 4
      and j["options"]["parallel"]["sharding"]["parameters"] and err == "")
code, out, err = run("estimate", "examples/mlp.yaml", "--zero", "3", "--summary")
check("estimate --zero 3 on one GPU warns that it shards nothing",
      code == 0 and err.startswith("nnmem: warning: --zero 3 over one GPU") and "shards nothing" in err)
code, out, err = run("estimate", "examples/mlp.yaml", "--gpus", "8", "--fsdp", "full", "--summary")
check("estimate --fsdp full: the table's shards and gathered parameters",
      code == 0 and "this rank's shard of 1/8 (fsdp_full, modelled)" in out and "all-gathered parameters" in out)

# Hugging Face config.json: read wherever a spec is; `import` prints the spec it estimates as.
with tempfile.TemporaryDirectory() as folder:
    config = "examples/hf/tiny-llama/config.json"
    code, spec, _ = run("import", config)
    path = os.path.join(folder, "tiny-llama.yaml")
    with open(path, "w") as f:
        f.write(spec)
    totals = [json.loads(run("estimate", p, "--batch", "2", "--format", "json")[1])["totals"] for p in (config, path)]
    check("import: the spec estimates as the config", code == 0 and "blocks:" in spec and totals[0] == totals[1] and
          totals[0]["params"] == 202048)
    code, out, _ = run("estimate", "examples/hf/bert-base-uncased/config.json", "--architecture", "BertModel", "--format", "json")
    check("estimate --architecture: the head class", code == 0 and json.loads(out)["totals"]["params"] == 109482240)
    code, _, err = run("check", "examples/hf/Llama-2-7b-hf/config.json", "--batch", "1")
    check("check reads a config, and notes its storage dtype", code == 0 and "torch_dtype float16 is the dtype the checkpoint" in err)
    code, out, _ = run("compare", "examples/hf/tiny-gpt2/config.json", "examples/hf/tiny-llama/config.json")
    check("compare reads configs", code == 0 and "gpt2" in out and "llama" in out)
    code, _, err = run("estimate", "examples/mlp.yaml", "--architecture", "BertModel")
    check("--architecture on a spec is refused", code == 1 and "--architecture is for a Hugging Face config.json" in err)

# An error of the command line's values, with no file to place it in, is the command's own error.
code, _, err = run("megatron", "--preset", "llama2-7b", "--layers", "1099511627776")
check("megatron beyond 2^53: 'nnmem: error: megatron: ...', exit 1",
      code == 1 and err.startswith("nnmem: error: megatron: 9,007,199,254,745,088 is beyond 2^53"))

# --help shows every default.
code, out, _ = run("estimate", "--help")
for default in ["--micro-batch INT:INT in [1 - 1099511627776]=1\n", "}=adam\n", "}=train\n", "}=cuda\n", "--overhead TEXT=0 ",
                "=the spec's, else float32\n", "--max-layers INT:POSITIVE=100000\n", "--torch TEXT:{2.13,1.13}=2.13\n"]:
    check("estimate --help shows " + default, code == 0 and default in out)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
