#!/usr/bin/env bash
# The one run on a GPU machine, from the repo root: bench/gpu_check.py, then an optional ladder, on a workspace
# prebuilt elsewhere (the GPU machine has no curation packages and no network).
#
#   bash bench/gpu_device.sh     # the ignored folder .gpu/ carried beside the tracked files (the run's carry)
#   LADDER_COMMAND='python3 -m loom -w "$WS" ladder ...' GPU_CHECK_ARGS='--steps 20' bash bench/gpu_device.sh
#
# .gpu/ws/   the bundled corpora curated with an 8192-token tokenizer: gpu_check.py's build_workspace, less work/
# .gpu/whl/  cp312 wheels of what the image lacks (duckdb, zstandard, warcio), installed into $SITE, no network
# Logs go to $OUT: env.log (versions, the import closure), gpu_check.log, ladder.log, and runs.tgz (the workspace's
# runs/ and ladders/: metrics, run.json, reports, fits; no checkpoints). LADDER_COMMAND runs after the check, in
# the same workspace ($WS). A failed step does not stop the next; the exit status is non-zero if any failed.
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
             "six", "scipy", "pandas", "triton"):
    try:
        print(f"  {name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"  {name} MISSING")
import duckdb, loom.cli, mixtures.compile, reports.run, trainer.loop  # the import closure, said once up front
EOF
} 2>&1 | tee "$OUT/env.log"
status=$?

# shellcheck disable=SC2086  # GPU_CHECK_ARGS is a list of options
"$PY" bench/gpu_check.py --workspace "$WS" $GPU_CHECK_ARGS 2>&1 | tee "$OUT/gpu_check.log" || status=1

if [ -n "${LADDER_COMMAND:-}" ]; then
    bash -c "$LADDER_COMMAND" 2>&1 | tee "$OUT/ladder.log" || status=1
fi

kept=$(cd "$WS" && ls -d runs ladders 2>/dev/null)
[ -z "$kept" ] || tar czf "$OUT/runs.tgz" -C "$WS" --exclude=checkpoints $kept || true
exit "$status"
