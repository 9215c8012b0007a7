"""The trainer on one GPU: dense and MoE, bf16, eager and compiled, through `loom train` (the real loop); and the
transformers annotator kind on the GPU against the CPU.

    python bench/gpu_check.py [--workspace WS] [--models small,small-moe] [--steps 20] [--skip 8] [--no-fsdp]
                              [--parts annotator,trainer]

Cases, each a short `loom train` run on one rank: every model eager and with --compile (bf16 autocast), and the
first model sharded by FSDP2 on a one-rank torchrun group (bf16 through FSDP2's mixed-precision policy).
Prints a table: the precision the run recorded, median tokens/s, achieved TFLOP/s and MFU over the steps after
the first --skip (compilation and warm-up), and the last loss. Without --workspace it builds one in a temporary
folder from the bundled corpora (tokenizer, curate, a mixture of its own; no network, untimed, about a minute on
16 cores). Where torch sees no GPU it says so in one line and exits 0, so `make bench` passes on CPU.
`--allow-cpu` runs the same cases on CPU, to check the script itself (its figures mean nothing there).
Sized to finish in under 5 minutes on one H100/H200, workspace included.

The annotator part (first, seconds): the tiny classifier of the tests (tests/tiny_classifier.py, random weights)
scored by `kind = "transformers"` on the CPU and on cuda, every score within ANNOTATOR_TOLERANCE of the CPU's, with
texts/s on each. It runs its CPU part anywhere; without a GPU it says the cuda part was skipped, and without
transformers installed it says so in one line (both exit 0).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOOM = [sys.executable, "-m", "loom"]
MIXTURE = "gpucheck"
SPEC = """name = "gpucheck"
seq_len = {seq_len}
global_batch = {global_batch}
steps = {steps}
max_epochs = 64
[weights]
web = 0.2
docs = 0.4
code = 0.4
"""  # one phase: the LR warms up over the first 5% of the steps and stays flat
GPU_SHAPE = {"seq_len": 512, "global_batch": 64}  # 32,768 tokens per step
CPU_SHAPE = {"seq_len": 64, "global_batch": 8}  # --allow-cpu: only the plumbing is checked
ANNOTATOR_TEXTS, ANNOTATOR_BATCH, ANNOTATOR_TOLERANCE = 2048, 64, 1e-4


def env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def run(command: list, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([*map(str, command)], capture_output=True, text=True, env=env(), cwd=REPO, **kwargs)
    if result.returncode:
        sys.exit(f"failed ({result.returncode}): {' '.join(map(str, command))}\n{result.stdout[-3000:]}\n"
                 f"{result.stderr[-3000:]}")
    return result


def build_workspace(ws: Path, steps: int, shape: dict) -> None:
    """The bundled corpora curated with their own tokenizer, and a mixture of `steps` steps compiled."""
    sources = REPO / "examples" / "sources.toml"
    workers = max(1, min(8, (os.cpu_count() or 2) // 2))
    run([*LOOM, "tokenizer", "train", "--sources", sources, "--vocab-size", 8192, "--output",
         ws / "models" / "tokenizer.json"])
    run([*LOOM, "-w", ws, "curate", "--sources", sources, "--workers", workers])
    write_mixture(ws, steps, shape)


def write_mixture(ws: Path, steps: int, shape: dict) -> None:
    (ws / "mixtures").mkdir(parents=True, exist_ok=True)
    (ws / "mixtures" / f"{MIXTURE}.toml").write_text(SPEC.format(steps=steps, **shape), encoding="utf-8")
    run([*LOOM, "-w", ws, "mix", "build", MIXTURE])


def cases(models: list[str], fsdp: bool) -> list[dict]:
    out = [{"model": m, "compile": c, "fsdp": False} for m in models for c in (False, True)]
    return out + ([{"model": models[0], "compile": False, "fsdp": True}] if fsdp else [])


def train_case(ws: Path, case: dict, steps: int, device: str) -> Path:
    tags = "-compiled" * case["compile"] + "-fsdp" * case["fsdp"]
    name = f"check-{case['model']}{tags}-{int(time.time())}"
    options = ["--mixture", MIXTURE, "--run-name", name, "--model", case["model"], "--max-steps", steps,
               "--device", device, "--checkpoint-every", 10**6, "--eval-every", 10**6, "--report-every", 10**6]
    options += ["--compile"] if case["compile"] else []
    if case["fsdp"]:  # one rank in a real process group, so fully_shard and its mixed-precision policy apply
        run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1", "-m", "trainer",
             "--workspace", ws, *options, "--fsdp"], timeout=600)
    else:
        run([*LOOM, "-w", ws, "train", *options], timeout=600)
    return ws / "runs" / name


def summary(run_dir: Path, skip: int) -> dict:
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    counted = lines[skip:] or lines
    mfus = [r["mfu"] for r in counted if r.get("mfu") is not None]
    return {"precision": json.loads((run_dir / "run.json").read_text()).get("precision", "?"),
            "tokens_per_second": statistics.median(r["tokens_per_second"] for r in counted),
            "tflops": statistics.median(r["flops_per_second"] for r in counted) / 1e12,
            "mfu": statistics.median(mfus) if mfus else None, "loss": lines[-1]["loss"],
            "peak_source": lines[-1]["peak_source"], "steps": len(counted)}


def annotator_texts(count: int) -> list[str]:
    """Texts of 0 to 150 of the tiny tokenizer's words (and some it lacks), beyond its 64 positions at times."""
    import random

    from tiny_classifier import WORDS

    rng = random.Random(0)
    words = [*WORDS, "unknown", "Mixed-Case", "3.14"]
    return [" ".join(rng.choice(words) for _ in range(rng.randrange(150))) for _ in range(count)]


def timed_scores(scorer, texts: list[str]) -> tuple[list[float], float]:
    scorer.scores(texts[:ANNOTATOR_BATCH])  # warm-up: CUDA kernels, allocator
    began = time.perf_counter()
    scores = scorer.scores(texts)
    return scores, len(texts) / (time.perf_counter() - began)


def annotator_check() -> bool:
    """kind = "transformers" on cuda against the CPU; the CPU part alone where torch sees no GPU. False: a FAIL
    (said in a line), which lets the trainer's cases run before the script exits 1."""
    import importlib.util

    if importlib.util.find_spec("transformers") is None:
        print("gpu_check annotator: skipped, transformers is not installed here (pip install 'loom[transformers]')")
        return True
    import torch

    sys.path[:0] = [str(REPO), str(REPO / "tests")]
    from curation.steps.annotate.kinds import AnnotatorConfig
    from curation.steps.annotate.transformers import TRANSFORMERS, TransformersScorer
    from tiny_classifier import save_tiny_classifier

    texts = annotator_texts(ANNOTATOR_TEXTS)
    with tempfile.TemporaryDirectory(prefix="loom-gpu-check-annotator-") as tmp:
        config = AnnotatorConfig(name="tiny", kind="transformers", model=str(save_tiny_classifier(Path(tmp) / "m")),
                                 label="hi", batch_size=ANNOTATOR_BATCH)
        if problem := TRANSFORMERS.check(config):
            print(f"gpu_check annotator: FAIL, {problem}")
            return False
        cpu, cpu_rate = timed_scores(TransformersScorer(config, device="cpu"), texts)
        line = f"gpu_check annotator (transformers, {len(texts)} texts): cpu {cpu_rate:,.0f} texts/s"
        if not torch.cuda.is_available():
            print(f"{line}; the cuda part skipped, torch sees no GPU here")
            return True
        scorer = TRANSFORMERS.load(config)
        assert scorer.device.type == "cuda", scorer.device  # the kind picks the GPU by itself
        gpu, gpu_rate = timed_scores(scorer, texts)
    largest = max(abs(a - b) for a, b in zip(cpu, gpu))
    print(f"{line}, cuda {gpu_rate:,.0f} texts/s; largest |cpu - cuda| {largest:.2e}")
    if len(gpu) == len(cpu) and largest <= ANNOTATOR_TOLERANCE:
        return True
    print(f"gpu_check annotator: FAIL, the cuda scores differ from the CPU's by {largest:.2e} "
          f"(> {ANNOTATOR_TOLERANCE})")
    return False


def trainer_check(args) -> None:
    """The trainer's cases and their table (skipped in one line without a GPU unless --allow-cpu)."""
    import torch

    if not torch.cuda.is_available() and not args.allow_cpu:
        print("gpu_check: skipped, torch sees no GPU here (run it on a machine with one)")
        return
    device = "cuda" if torch.cuda.is_available() else "cpu"
    shape = GPU_SHAPE if device == "cuda" else CPU_SHAPE
    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    print(f"gpu_check on {name}, torch {torch.__version__}; {args.steps} steps of {shape['global_batch']} x "
          f"{shape['seq_len']} tokens per case, first {args.skip} not counted")
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="loom-gpu-check-") as tmp:
        ws = Path(args.workspace).resolve() if args.workspace else Path(tmp) / "ws"
        if args.workspace:
            write_mixture(ws, args.steps, shape)
        else:
            build_workspace(ws, args.steps, shape)
        print(f"workspace ready in {time.perf_counter() - began:.0f}s")
        rows = []
        for case in cases(args.models.split(","), not args.no_fsdp):
            case_began = time.perf_counter()
            result = summary(train_case(ws, case, args.steps, device), args.skip)
            rows.append((case, result, time.perf_counter() - case_began))
            print(f"  {case['model']} compile={case['compile']} fsdp={case['fsdp']}: {rows[-1][2]:.0f}s", flush=True)
    print(f"\n{'model':<11}{'compile':<9}{'fsdp':<6}{'precision':<15}{'tokens/s':>12}{'TFLOP/s':>10}{'MFU':>8}"
          f"{'loss':>8}{'wall s':>8}")
    for case, r, seconds in rows:
        mfu = f"{r['mfu']:.1%}" if r["mfu"] is not None else "-"
        print(f"{case['model']:<11}{str(case['compile']):<9}{str(case['fsdp']):<6}{r['precision']:<15}"
              f"{r['tokens_per_second']:>12,.0f}{r['tflops']:>10.3g}{mfu:>8}{r['loss']:>8.3f}{seconds:>8.0f}")
    source = rows[-1][1]["peak_source"]
    print(f"MFU against the peak of: {source}" if any(r["mfu"] is not None for _, r, _ in rows) else source)
    print(f"total {time.perf_counter() - began:.0f}s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspace", help="a workspace to reuse (its mixture `gpucheck` is rebuilt)")
    parser.add_argument("--models", default="small,small-moe")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--skip", type=int, default=8, help="first steps of each run not counted")
    parser.add_argument("--no-fsdp", action="store_true", help="leave out the one-rank FSDP2 case")
    parser.add_argument("--allow-cpu", action="store_true", help="run on CPU to check the script itself")
    parser.add_argument("--parts", default="annotator,trainer", help="which checks: annotator, trainer or both")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if unknown := parts - {"annotator", "trainer"}:
        parser.error(f"--parts: no part {', '.join(sorted(unknown))}; name annotator, trainer or both")
    annotator_ok = "annotator" not in parts or annotator_check()
    if "trainer" in parts:
        trainer_check(args)
    if not annotator_ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
