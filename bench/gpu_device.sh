#!/usr/bin/env bash
# The one run on a GPU machine, from the repo root: the GPU ladder preset's first rungs through `loom ladder`, then
# bench/gpu_check.py, on a workspace prebuilt elsewhere (the GPU machine has no curation packages and no network).
#
#   bash bench/gpu_device.sh     # the ignored folder .gpu/ carried beside the tracked files (the run's carry)
#   LADDER_RUNGS=3 LADDER_TPP=1 GPU_CHECK_ARGS='--steps 20' bash bench/gpu_device.sh
#
# The ladder is examples/ladders/gpu.toml with its first LADDER_RUNGS rungs (shapes, LR rule, train options as
# they are) at LADDER_TPP tokens per active parameter instead of 20 (the preset's full budget takes hours), on a
# mixture of the bundled corpora allowed to repeat them (they hold 2M tokens); LADDER_RUNGS=0 skips it.
#
# .gpu/ws/   the bundled corpora curated with an 8192-token tokenizer: gpu_check.py's build_workspace, less work/
# .gpu/whl/  cp312 wheels of what the image lacks (duckdb, zstandard, warcio), installed into $SITE, no network
# Logs go to $OUT: env.log (versions, the import closure), ladder.log, gpu_check.log, and runs.tgz (the workspace's
# runs/ and ladders/: metrics, run.json, reports, fits; no checkpoints). A failed step does not stop the next; the
# exit status is non-zero if any failed.
set -uo pipefail

PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/gpu-out}
SITE=${SITE:-/tmp/site}
WS=${WS:-/tmp/ws}
GPU_CHECK_ARGS=${GPU_CHECK_ARGS:-}
export WS
mkdir -p "$OUT"
[ -d .gpu/ws ] && compgen -G '.gpu/whl/*.whl' >/dev/null \
    || { echo "gpu_device: no .gpu/ws or .gpu/whl here: name .gpu in the run's carry" >&2; exit 1; }

"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .gpu/whl/*.whl \
    || { echo "gpu_device: the carried wheels did not install" >&2; exit 1; }
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
rm -rf "$WS" && cp -r .gpu/ws "$WS" || exit 1

{
    nvidia-smi -L || true
    "$PY" - <<'EOF'
import importlib.metadata as md, sys
import torch
print(f"python {sys.version.split()[0]} at {sys.executable}; torch {torch.__version__}, cuda {torch.version.cuda}, "
      f"GPU: {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none'}")
for name in ("numpy", "pyarrow", "duckdb", "tokenizers", "click", "rich", "xxhash", "zstandard", "warcio", "fsspec",
             "six", "scipy", "pandas", "triton", "transformers", "safetensors"):
    try:
        print(f"  {name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"  {name} MISSING")
import duckdb, loom.cli, mixtures.compile, reports.run, trainer.loop  # the import closure, said once up front
EOF
} 2>&1 | tee "$OUT/env.log"
status=$?

if [ "${LADDER_RUNGS:-3}" -gt 0 ]; then
    "$PY" - "$WS" "${LADDER_RUNGS:-3}" "${LADDER_TPP:-1}" <<'EOF'
import pathlib, re, sys
ws, rungs, tpp = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
preset = pathlib.Path("examples/ladders/gpu.toml").read_text()
head, *blocks = preset.split("[[rung]]")
blocks[-1], tail = blocks[-1].split("[target]")
spec = re.sub(r"(?m)^tokens_per_parameter = .*$", f"tokens_per_parameter = {tpp}", head)
spec += "".join("[[rung]]" + b for b in blocks[:rungs]) + "\n[target]" + tail
(ws / "gpu-first-rungs.toml").write_text(spec)
(ws / "mixtures").mkdir(exist_ok=True)
(ws / "mixtures" / "gpuladder.toml").write_text(
    'name = "gpuladder"\nseq_len = 1024\nglobal_batch = 32\ntotal_tokens = 1_000_000_000\nmax_epochs = 1e6\n'
    "[weights]\nweb = 0.2\ndocs = 0.4\ncode = 0.4\n[midtrain]\ndocs = 0.6\ncode = 0.4\n")
EOF
    "$PY" -m loom -w "$WS" ladder gpu --mixture gpuladder --spec "$WS/gpu-first-rungs.toml" 2>&1 \
        | tee "$OUT/ladder.log" || status=1
fi

# shellcheck disable=SC2086  # GPU_CHECK_ARGS is a list of options
"$PY" bench/gpu_check.py --workspace "$WS" $GPU_CHECK_ARGS 2>&1 | tee "$OUT/gpu_check.log" || status=1

kept=$(cd "$WS" && ls -d runs ladders 2>/dev/null)
[ -z "$kept" ] || tar czf "$OUT/runs.tgz" -C "$WS" --exclude=checkpoints $kept || true
exit "$status"
