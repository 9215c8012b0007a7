"""Throughput as runs report it: tokens/s and achieved FLOP/s always, MFU only against a known peak and never
above 100%; the GPU peak table by exact device name; `--compile` against the uncompiled run."""

import json

import pytest

from helpers import TINY_MODEL, copy_curated, run_loom, write_spec
from trainer.config import ModelConfig, flops_per_token
from trainer.throughput import Peak, Throughput, gpu_peak_flops

SPEC = """seq_len = 32
global_batch = 8
steps = 6
[weights]
web = 0.4
docs = 0.3
code = 0.3
"""
STEPS = ["--max-steps", 3, "--checkpoint-every", 100, "--eval-every", 100, "--report-every", 3]


@pytest.fixture(scope="module")
def ws(tmp_path_factory, curated_slice, slice_tokenizer):
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("tput") / "ws")
    write_spec(ws, "tputmix", SPEC)
    run_loom("-w", ws, "mix", "build", "tputmix")
    return ws


def train(ws, run: str, *args, check=True, **kwargs):
    return run_loom("-w", ws, "train", "--mixture", "tputmix", "--run-name", run, *TINY_MODEL, *STEPS, *args,
                    check=check, **kwargs)


def records(ws, run: str) -> list[dict]:
    return [json.loads(line) for line in (ws / "runs" / run / "metrics.jsonl").read_text().splitlines()]


# ---- the GPU table ------------------------------------------------------------------------------------


def test_gpu_peaks_go_by_the_exact_device_name():
    assert gpu_peak_flops("NVIDIA H100 80GB HBM3") == 989.5e12  # SXM
    assert gpu_peak_flops("NVIDIA H100 PCIe") == 756.5e12
    assert gpu_peak_flops("NVIDIA H100 NVL") == 835.5e12
    assert gpu_peak_flops("NVIDIA H200") == 989.5e12
    assert gpu_peak_flops("NVIDIA L4") == 121e12
    assert gpu_peak_flops("NVIDIA L40") == 181.05e12  # not L4's, though "L4" is inside "L40"
    assert gpu_peak_flops("NVIDIA L40S") == 362.05e12
    assert gpu_peak_flops("NVIDIA A100-SXM4-80GB") == gpu_peak_flops("NVIDIA A100 80GB PCIe") == 312e12
    for unknown in ("NVIDIA H100", "NVIDIA GH200 480GB", "NVIDIA GeForce RTX 4090", "Tesla T4", ""):
        assert gpu_peak_flops(unknown) is None, unknown


def test_mfu_is_left_out_without_a_peak_and_where_the_peak_is_below_what_was_achieved():
    warnings = []
    none = Throughput(1e6, 2, Peak(None, "no MFU: no known peak on cpu; pass --peak-tflops"), warnings.append)
    step = none.of_step(tokens=1000, seconds=0.5)
    assert step["tokens_per_second"] == 2000 and step["flops_per_second"] == 2e9
    assert step["flops_per_second_per_device"] == 1e9 and step["mfu"] is None
    known = Throughput(1e6, 2, Peak(4e9, "given (--peak-tflops)"), warnings.append)
    assert known.of_step(1000, 0.5)["mfu"] == 0.25
    assert known.of_step(1000, 0.05)["mfu"] is None  # 1e10 per device, above the 4e9 peak
    assert known.of_step(1000, 0.01)["mfu"] is None
    assert known.of_step(1000, 1.0)["mfu"] == 0.125
    assert len(warnings) == 1 and "below" in warnings[0] and "--peak-tflops" in warnings[0]


# ---- runs on CPU --------------------------------------------------------------------------------------


def test_a_cpu_run_reports_tokens_and_flops_per_second_but_no_mfu_without_a_peak(ws):
    result = train(ws, "nopeak")
    lines = records(ws, "nopeak")
    run = json.loads((ws / "runs" / "nopeak" / "run.json").read_text())
    per_token = flops_per_token(ModelConfig(**run["model"]), 32)
    for r in lines:
        assert r["tokens_per_second"] == pytest.approx(8 * 32 / r["step_seconds"])
        assert r["flops_per_second"] == pytest.approx(per_token * r["tokens_per_second"])
        assert r["flops_per_second_per_device"] == r["flops_per_second"]
        assert r["mfu"] is None and r["peak_flops"] is None and "--peak-tflops" in r["peak_source"]
    assert "TFLOP/s" in result.stdout and "mfu -" in result.stdout
    assert run["precision"] == "fp32"
    report = (ws / "runs" / "nopeak" / "report.html").read_text()
    assert "no MFU: no known peak on cpu" in report and 'id="flops-chart"' in report


def test_an_older_runs_lines_with_a_measured_peak_still_render(ws, tmp_path):
    """Before achieved FLOP/s: every line had an `mfu` against a measured CPU peak, and no flops_per_second."""
    import shutil

    from reports.run import run_report

    if not (ws / "runs" / "nopeak").exists():
        train(ws, "nopeak")
    old = tmp_path / "old"
    shutil.copytree(ws / "runs" / "nopeak", old)
    lines = [{k: v for k, v in r.items() if not k.startswith("flops_per_second")} for r in records(ws, "nopeak")]
    for r in lines:
        r.update(mfu=0.191, peak_flops=1.2e11, peak_source="measured fp32 matmul")
    (old / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    info = json.loads((old / "run.json").read_text())
    del info["precision"]
    (old / "run.json").write_text(json.dumps(info))
    html = run_report(old).read_text()
    assert "19.1%" in html and "Peak for MFU: measured fp32 matmul, 0.12 TFLOP/s per device." in html


def test_with_a_given_peak_mfu_is_achieved_over_peak_and_a_peak_below_it_is_refused(ws):
    train(ws, "peak", "--peak-tflops", 1000)
    for r in records(ws, "peak"):
        assert r["peak_flops"] == 1e15 and r["mfu"] == pytest.approx(r["flops_per_second_per_device"] / 1e15)
        assert 0 < r["mfu"] <= 1
    low = train(ws, "lowpeak", "--peak-tflops", 1e-9)  # 1,000 FLOP/s: any real step achieves more
    assert all(r["mfu"] is None and r["peak_flops"] == pytest.approx(1e3) for r in records(ws, "lowpeak"))
    assert low.stdout.count("is below the") == 1 and "MFU is left out" in low.stdout
    assert "MFU left out on 3 of the last 3 steps" in (ws / "runs" / "lowpeak" / "report.html").read_text()


def test_compile_without_a_cpp_compiler_is_refused_in_one_line(ws, monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler")  # inductor's C++ compiler on CPU (torch._inductor.config.cpp.cxx)
    refused = train(ws, "nocc", "--compile", check=False)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--compile on CPU needs a C++ compiler" in refused.stderr and "no-such-compiler" in refused.stderr


@pytest.mark.slow  # inductor's first compile of the blocks: ~30-50 s on 2 shared cores
def test_a_compiled_run_gives_the_losses_of_the_uncompiled_one(ws):
    train(ws, "eager", "--max-steps", 4, "--eval-every", 4, "--model", "tiny-moe")
    train(ws, "compiled", "--max-steps", 4, "--eval-every", 4, "--model", "tiny-moe", "--compile", timeout=600)
    eager, compiled = records(ws, "eager"), records(ws, "compiled")
    assert len(eager) == len(compiled) == 4
    # not bitwise: inductor fuses and reorders the float arithmetic; measured here 2e-7 relative
    for a, b in zip(eager, compiled):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5)
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-4)
    assert compiled[-1]["val_loss"] == pytest.approx(eager[-1]["val_loss"], rel=1e-5)
    assert json.loads((ws / "runs" / "compiled" / "run.json").read_text())["config"]["compile"] is True
