"""`loom mix search --over domain,quality_bucket` on the bench web corpus: a one-source mixture whose cells are
searched, confirmed against the proportional and uniform mixtures (issue 38's check).

    python bench/search_cells.py [--docs 30000] [--domains 8] [--buckets 4] [--over domain,quality_bucket]
                                 [--proxies N] [--ladder cpu|FILE] [--toy] [--workdir DIR] [--keep]

1. The corpus: bench/web_corpus.py's pages (--docs, --seed) as jsonl.gz shards: the source `crawl`, the only one
   curated (so that its quality buckets are the quantiles of its own scores).
2. The workspace: the tokenizer curate_vs_datatrove.py trains, `loom quality train` on the bundled docs (the good
   class) against the fortunes (the poor one), files not sources, then `loom curate` with
   `[domains] k = --domains` on the crawl and `[quality] buckets = --buckets` (each `loom` as a user runs it).
3. The mixture `crawl`: the crawl alone, its budget --passes (2) x its training tokens, max_epochs the smallest
   whole number from 4 up (at most 16) that keeps the uniform mixture of the cells within its caps (so uniform
   can be trained; where a cell is too small for that, uniform is reported over its cap and not trained).
4. `loom mix search cells --from crawl --over OVER --proxies N --confirm --parallel 2`: N is the number of cells
   unless given (Olmix's swarm grows with the domains; the ridge surrogate needs ceil(cells / 2) + 4), the cpu
   ladder's smallest rung as proxies and the next as the confirm runs (--toy: a ladder of tiny rungs that proves
   the script in minutes, not a measurement).
Prints the cells, the surrogate's leave-one-out Spearman (goal >= 0.8), and each confirm run's measured objective
(the crawl's validation loss) with the searched mixture's against proportional's and uniform's; the last line is
searched / proportional (< 1.0: the search paid). Exits 1 if the search fails; a baseline that wins is reported,
not a failure. --domains 0 curates without [domains] (then --over quality_bucket).
"""

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from loom_job import (add_domains_argument, add_run_arguments, bench_tokenizer, bench_workdir,  # noqa: E402
                      machine_load, write_jsonl_shards)

SPEARMAN_GOAL = 0.8
CAP_MARGIN = 0.95  # sweeps.search_plan's: designs keep this far under each cap
MAX_EPOCHS = 16  # a cell read more often than this is no longer the data it was
CORPORA = REPO / "examples" / "corpora"
# tiny rungs for --toy: 24, 40 and 60 steps of 64 sequences of 32 tokens (a batch wide enough to weigh tens of cells)
TOY_LADDER = """[[rung]]
d_model = 16
n_layers = 1
n_heads = 2
tokens = 49_152
[[rung]]
d_model = 24
n_layers = 1
n_heads = 2
tokens = 81_920
[[rung]]
d_model = 32
n_layers = 2
n_heads = 2
tokens = 122_880
[target]
d_model = 32
n_layers = 2
n_heads = 2
tokens = 409_600
[lr]
base = 1e-2
base_width = 32
[train]
eval_every = 8
checkpoint_every = 8
report_every = 8
"""


def loom(ws: Path, *args, quiet: bool = False) -> float:
    """`loom -w WS ARGS` to its end; the wall seconds."""
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "loom", "-w", str(ws), *map(str, args)], check=True, cwd=REPO,
                   stdout=subprocess.DEVNULL if quiet else None)
    return time.monotonic() - began


def sources_toml(shards: Path, k: int, sample: int | None, buckets: int) -> str:
    """The crawl alone: its quality buckets are the quantiles of its own scores."""
    sampled = f"sample = {sample}\n" if sample else ""
    domains = f'\n[domains]\nk = {k}\nsources = ["crawl"]\nseed = 0\n{sampled}' if k else ""
    return f"""[[source]]
name = "crawl"
format = "jsonl.gz"
paths = ["{shards}/*.jsonl.gz"]
id_field = "id"

[quality]
buckets = {buckets}
{domains}"""


def curated_workspace(workdir: Path, args) -> Path:
    from web_corpus import web_corpus

    texts = web_corpus(args.docs, args.seed)
    shards = workdir / "corpus"
    write_jsonl_shards(texts, args.shards, shards)
    ws = workdir / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "sources.toml").write_text(sources_toml(shards, args.domains, args.domains_sample, args.buckets), encoding="utf-8")
    (ws / "models").mkdir(exist_ok=True)
    bench_tokenizer(texts, ws / "models" / "tokenizer.json")
    files = lambda folder, pattern: ",".join(str(p) for p in sorted((CORPORA / folder).glob(pattern)))  # noqa: E731
    loom(ws, "quality", "train", "--positive", files("docs", "*.jsonl.gz"), "--negative",
         files("fortunes", "*.jsonl.zst"), quiet=True)
    seconds = loom(ws, "curate", "--workers", args.workers, quiet=True)
    print(f"corpus: {len(texts):,} pages curated in {seconds:.0f} s; load average {machine_load()}", flush=True)
    return ws


def crawl_cells(ws: Path, over: list[str]) -> list[tuple[str, int]]:
    """The crawl's cells over the axes, with their training tokens, as the search will weigh them."""
    from base.workspace import Workspace
    from mixtures.cells import cell_keys, domain_names
    from mixtures.manifest import documents, read_curation

    gen = Workspace(ws).published()
    return cell_keys("crawl", over, documents(gen), domain_names(read_curation(gen)))


def mixture_toml(cells: list[tuple[str, int]], passes: float, seq_len: int, global_batch: int) -> tuple[str, float]:
    """The crawl alone for `passes` times its tokens, max_epochs the smallest from 4 up to MAX_EPOCHS within which
    the uniform mixture of the cells fits (past it, uniform is over a cap and reported, not trained)."""
    total = sum(t for _, t in cells)
    target = int(passes * total)
    uniform_epochs = max(target / len(cells) / t for _, t in cells) / CAP_MARGIN
    max_epochs = float(min(MAX_EPOCHS, max(4, math.ceil(uniform_epochs))))
    if uniform_epochs > max_epochs:
        print(f"uniform is over a cap: its smallest cell would be read {uniform_epochs * CAP_MARGIN:.1f} times; "
              f"--passes {passes * MAX_EPOCHS / uniform_epochs:.2g} would keep it within {MAX_EPOCHS} epochs")
    return (f'name = "crawl"\nseq_len = {seq_len}\nglobal_batch = {global_batch}\ntotal_tokens = {target}\n'
            f'max_epochs = {max_epochs:g}\nseed = 0\n\n[weights]\ncrawl = 1.0\n'), max_epochs


def print_results(search: dict, seconds: float, cells: list[tuple[str, int]]) -> float | None:
    proxies = search["proxies"]
    finished = sum(p["status"] == "finished" for p in proxies)
    held = search["surrogate"]["held_out"]
    searched_cells = sum(len(keys) for keys in search["keys"].values())
    print(f"\nsearch cells: {searched_cells} of the {len(cells)} cells searched (mixtures.cells leaves out a cell under "
          f"one sequence per batch), {finished} of {len(proxies)} proxies finished, {seconds:.0f} s; "
          f"surrogate {search['surrogate']['model']}")
    print(f"leave-one-out Spearman {held['spearman']:.3f} (goal >= {SPEARMAN_GOAL}: "
          f"{'met' if held['spearman'] >= SPEARMAN_GOAL else 'missed'}), mean absolute error "
          f"{held['mean_abs_error']:.4f}")
    confirm = search.get("confirm") or {}
    measured = {r["mixture"]: r["objective"] for r in confirm.get("runs", [])}
    print(f"confirm rung {confirm.get('rung')}: " + "; ".join(
        f"{m} {v:.4f}" if v is not None else f"{m} -" for m, v in measured.items()))
    for kind, why in (confirm.get("skipped") or {}).items():
        print(f"  {kind}: not trained: {why}")
    searched = measured.get("searched")
    for baseline in ("proportional", "uniform"):
        value = measured.get(baseline)
        if searched is not None and value is not None:
            said = "searched lower" if searched < value else f"{baseline} lower (the search did not pay)"
            print(f"searched {searched:.4f} vs {baseline} {value:.4f}: {searched - value:+.4f}, {said}")
    proportional = measured.get("proportional")
    return searched / proportional if searched is not None and proportional else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, docs=30_000, shards=8)
    add_domains_argument(parser)
    parser.set_defaults(domains=8)  # --domains 0: no [domains] table (then --over quality_bucket)
    parser.add_argument("--buckets", type=int, default=4, help="[quality] buckets")
    parser.add_argument("--over", default="domain,quality_bucket")
    parser.add_argument("--proxies", type=int, help="default: one per cell")
    parser.add_argument("--passes", type=float, default=2.0, help="the target run's tokens / the crawl's")
    parser.add_argument("--ladder", default="cpu", help="the ladder spec of the proxies and confirm runs")
    parser.add_argument("--toy", action="store_true", help="a ladder of tiny rungs: proves the script, no figure")
    args = parser.parse_args()
    over = args.over.split(",")
    with bench_workdir(args, "search-cells") as workdir:
        ws = curated_workspace(workdir, args)
        cells = crawl_cells(ws, over)
        total = sum(t for _, t in cells)
        print(f"cells over {args.over}: {len(cells)}, {total:,} training tokens: " + ", ".join(
            f"{key.split(':', 1)[1]} {t / total:.1%}" for key, t in cells), flush=True)
        ladder = args.ladder
        seq_len, global_batch = 256, 32
        if args.toy:
            ladder, seq_len, global_batch = workdir / "toy-ladder.toml", 32, 64
            ladder.write_text(TOY_LADDER)
        spec, max_epochs = mixture_toml(cells, args.passes, seq_len, global_batch)
        (ws / "mixtures").mkdir(exist_ok=True)
        (ws / "mixtures" / "crawl.toml").write_text(spec)
        proxies = args.proxies or max(len(cells), math.ceil(len(cells) / 2) + 4)
        print(f"mixture crawl: {args.passes:g} passes over the crawl, max_epochs {max_epochs:g}; {proxies} proxies",
              flush=True)
        seconds = loom(ws, "mix", "search", "cells", "--from", "crawl", "--over", args.over, "--proxies", proxies,
                       "--ladder", ladder, "--confirm", "--parallel", 2)
        search = json.loads((ws / "searches" / "cells" / "search.json").read_text())
        ratio = print_results(search, seconds, cells)
        loom(ws, "mix", "build", "cells", quiet=True)
        print("the chosen mixture builds: `loom mix build cells` finished")
        print(f"load average after: {machine_load()}")
        print(f"searched / proportional objective at the confirm rung: {ratio:.4f}" if ratio else
              "searched / proportional: not measured")


if __name__ == "__main__":
    main()
