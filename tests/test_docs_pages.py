"""The reference pages in docs/, run as written: every ```console and ```bash block of each page, in page order, in
a folder whose `loom-work` is a small copy of the quickstart workspace (the curated slice, its tokenizer, and a
`sample` mixture of the slice's sources), each output checked against the lines the page shows for it, as
tests/test_tutorial.py runs docs/tutorial.md. A block preceded by `<!-- docs-test: slow -->` runs only in the page's
slow test, which runs the whole page (in a fresh copy); one preceded by `<!-- docs-test: skip: WHY -->`
is not run (a real cluster's address, a browser), and says why on the page. Other fences (toml, text) hold no
command: the test fails on a `$ loom` line or a line starting `loom ` in one."""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import EXAMPLES, REPO, copy_curated, write_spec
from test_tutorial import assert_shows, tutorial_steps

PAGES = ("curation", "storage", "mixtures", "training", "sweeps", "reports")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
MARK = re.compile(r"<!-- docs-test: (slow|skip: [^>]+?) -->\s*$")
RUNNABLE = ("console", "bash")
SAMPLE = """seq_len = 32
global_batch = 8
steps = 40
seed = 0
max_epochs = 8
[weights]
web = 0.3
docs = 0.4
code = 0.3
[midtrain]
docs = 0.5
"web:lang=de" = 0.2
code = 0.3
[eval.bofh]
path = "evals/bofh-excuses.jsonl"
"""  # the slice has no `reference` source and no quality scores: the built-in sample's keys, in its sources


def page_blocks(markdown: str) -> list[tuple[str, str, str]]:
    """(fence language, how the test runs it: run, slow or skip: WHY, the block's text) of every fenced block."""
    blocks = []
    for fence in FENCE.finditer(markdown):
        before = markdown[:fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        blocks.append((fence.group(1), mark.group(1) if mark else "run", fence.group(2)))
    return blocks


def steps_of(markdown: str, how: str) -> list[tuple[str, list[str]]]:
    """The (command, shown output) steps of the page's runnable blocks that the test runs `how`: "run", the blocks
    not marked; "slow", every block not skipped (a slow block may go on from what the blocks before it did)."""
    steps = []
    for language, mark, text in page_blocks(markdown):
        if language in RUNNABLE and (mark == how or how == "slow" and mark == "run"):
            steps += tutorial_steps(f"```{language}\n{text}```\n")
    return steps


def page(name: str) -> str:
    return (REPO / "docs" / f"{name}.md").read_text(encoding="utf-8")


def docs_workspace(folder: Path, curated_slice, slice_tokenizer, slice_sources) -> Path:
    """`folder/loom-work`: the curated slice with its sources.toml, tokenizer, eval set and `sample` mixture."""
    ws = copy_curated(curated_slice, slice_tokenizer, folder / "loom-work")
    text = slice_sources.read_text(encoding="utf-8")
    (ws / "sources.toml").write_text(f"root = {str(slice_sources.parent)!r}\n{text}", encoding="utf-8")
    curated_at = (ws / "published.json").stat().st_mtime - 1  # as if written before the curation, as quickstart does
    os.utime(ws / "sources.toml", (curated_at, curated_at))
    (ws / "evals").mkdir()
    shutil.copy(EXAMPLES / "evals" / "bofh-excuses.jsonl", ws / "evals")
    write_spec(ws, "sample", SAMPLE)
    return ws


def run_steps(steps, folder: Path, extra_env: dict[str, str] | None = None) -> None:
    env = {**os.environ, "LOOM_SRC": str(REPO), "COLUMNS": "160", "PYTHONPATH": str(REPO),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **(extra_env or {})}
    env.pop("LOOM_WORKSPACE", None)
    for command, shown in steps:
        started = time.monotonic()
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=folder, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        assert done.returncode == 0, f"$ {command}\nexit {done.returncode}:\n{done.stdout}"
        assert_shows(command, shown, done.stdout)
        if os.environ.get("LOOM_DOCS_TIMES"):
            print(f"{time.monotonic() - started:6.1f}s  {command.splitlines()[0][:100]}", file=sys.stderr)


def test_every_page_has_commands_and_every_command_block_is_run_or_says_why_not():
    for name in PAGES:
        blocks = page_blocks(page(name))
        assert steps_of(page(name), "run") or steps_of(page(name), "slow"), f"docs/{name}.md runs no command"
        for language, mark, text in blocks:
            if language not in RUNNABLE:
                hidden = [line for line in text.splitlines() if re.match(r"(\$ )?loom ", line)]
                assert not hidden, f"docs/{name}.md: a command in a ```{language} block is run by no test: {hidden}"
            if mark.startswith("skip"):
                assert len(mark) > len("skip: ") + 10, f"docs/{name}.md: a skipped block must say why"


def test_the_marks_are_read():
    markdown = ("```console\n$ loom status\nout\n```\n<!-- docs-test: slow -->\n```bash\nloom curate\n```\n"
                "<!-- docs-test: skip: a real cluster's address -->\n```console\n$ loom x\n```\n```toml\na = 1\n```\n")
    assert page_blocks(markdown) == [("console", "run", "$ loom status\nout\n"), ("bash", "slow", "loom curate\n"),
                                     ("console", "skip: a real cluster's address", "$ loom x\n"), ("toml", "run", "a = 1\n")]
    assert steps_of(markdown, "run") == [("loom status", ["out"])]
    assert steps_of(markdown, "slow") == [("loom status", ["out"]), ("loom curate\n", [])]


@pytest.mark.parametrize("name", PAGES)
def test_the_page_runs_as_written(name, short_tmp_path, curated_slice, slice_tokenizer, slice_sources, request):
    tmp_path = short_tmp_path
    steps = steps_of(page(name), "run")
    if not steps:
        pytest.skip(f"docs/{name}.md has only slow blocks")
    if slow_test_selected(name, request):
        pytest.skip(f"the slow test of docs/{name}.md runs these blocks, with its slow ones between them")
    docs_workspace(tmp_path, curated_slice, slice_tokenizer, slice_sources)
    run_steps(steps, tmp_path, page_env(name, request))


@pytest.mark.slow
@pytest.mark.parametrize("name", PAGES)
def test_the_pages_slow_blocks_run_as_written(name, short_tmp_path, curated_slice, slice_tokenizer, slice_sources,
                                              request):
    tmp_path = short_tmp_path
    if steps_of(page(name), "slow") == steps_of(page(name), "run"):
        pytest.skip(f"docs/{name}.md has no slow block")
    steps = steps_of(page(name), "slow")
    docs_workspace(tmp_path, curated_slice, slice_tokenizer, slice_sources)
    run_steps(steps, tmp_path, page_env(name, request))


def slow_test_selected(name: str, request) -> bool:
    """Whether this session also runs the page's slow test (CI's run of every test), which runs every block this
    test runs, with the same checks: the page is then run once, not twice (`make test` runs this test alone)."""
    slow = f"{test_the_pages_slow_blocks_run_as_written.__name__}[{name}]"
    return steps_of(page(name), "slow") != steps_of(page(name), "run") and any(
        item.name == slow for item in request.session.items)


def documented_keys(markdown: str) -> dict[str, set[str]]:
    """The keys the page's ```toml blocks show, set or commented out (`# key = ...`), by table: "" for the top
    level, "source" for [[source]] (a `[[x.y]]` table is "x.y")."""
    keys: dict[str, set[str]] = {}
    for language, _, text in page_blocks(markdown):
        table = ""
        for line in text.splitlines() if language == "toml" else ():
            header = re.match(r"\[\[?([\w.]+)\]\]?", line)
            if header:
                table = header.group(1)
            key = re.match(r"(?:# )?([a-z_]+)(?:\.\w+)? *=", line)
            if key and not header:
                keys.setdefault(table, set()).add(key.group(1))
    return keys


def test_the_reference_blocks_show_every_key_the_code_accepts():
    from dataclasses import fields

    from curation.config import QUALITY_KEYS, SOURCE_KEYS, DecontaminationConfig, DedupConfig
    from curation.steps.annotate import AnnotatorConfig
    from mixtures.spec import SPEC_KEYS
    from sweeps import spec as ladder_spec

    sources = documented_keys(page("curation"))
    assert sources[""] == {"root", "tokenizer"}
    assert sources["source"] == SOURCE_KEYS
    assert sources["quality"] == QUALITY_KEYS
    assert sources["dedup"] == {f.name for f in fields(DedupConfig)}
    assert sources["decontaminate"] == {f.name for f in fields(DecontaminationConfig)} - {"evals"}
    assert sources["decontaminate.eval"] == {"name", "paths", "text"}
    assert sources["annotate"] == {f.name for f in fields(AnnotatorConfig)}
    mixture = documented_keys(page("mixtures"))
    tables = {"weights", "midtrain", "phase", "eval", "rehydrate"}
    assert mixture[""] | {"validation_sequences"} == SPEC_KEYS - tables  # validation_sequences: the older spelling
    assert set(mixture) >= {"weights", "midtrain", "eval.bofh", "rehydrate"}
    ladder = documented_keys(page("sweeps"))  # the spec's reference block, then the toy ladder's (a bash heredoc)
    assert ladder[""] == ladder_spec.SPEC_KEYS - {"rung", "target", "lr", "fit", "train"}
    assert ladder["rung"] | ladder["target"] >= set(ladder_spec.SHAPE_KEYS) - {"n_experts", "top_k"}
    assert ladder["lr"] == {f.name for f in fields(ladder_spec.LRRule)}
    assert ladder["fit"] == {f.name for f in fields(ladder_spec.FitConfig)}


def every_command(group, path=("loom",)):
    """(the command's words, the click command) of every command under the group, the group itself first."""
    yield path, group
    for name, command in getattr(group, "commands", {}).items():
        yield from every_command(command, (*path, name))


def test_the_pages_name_every_command_and_every_option_of_the_cli():
    import click

    from loom.cli.commands import cli

    text = "\n".join(page(name) for name in PAGES)
    for words, command in every_command(cli):
        if len(words) > 1:
            assert " ".join(words) in text, f"`{' '.join(words)}` is on no page of docs/"
        for option in command.params:
            if isinstance(option, click.Option) and option.name not in ("workspace", "help"):
                flag = max(option.opts, key=len)
                assert flag in text, f"`{' '.join(words)} {flag}` is on no page of docs/"


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lowercased, punctuation but `-` and `_` dropped, spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_pages_finds_its_file_and_heading():
    for markdown in [REPO / "README.md", REPO / "bench" / "README.md", *(REPO / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)\s]+)\)", markdown.read_text(encoding="utf-8")):
            if re.match(r"\w+://", target):
                continue
            path, _, fragment = target.partition("#")
            linked = (markdown.parent / path).resolve() if path else markdown
            assert linked.exists(), f"{markdown.relative_to(REPO)}: a link to {target}, which does not exist"
            if fragment:
                headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), re.M)
                assert fragment in map(anchor, headings), f"{markdown.relative_to(REPO)}: no heading #{fragment}"


def page_env(name: str, request) -> dict[str, str]:
    """The object storage page's commands reach a real S3 server (SeaweedFS), with its bucket as $BUCKET."""
    if name != "storage":
        return {}
    server = request.getfixturevalue("s3_server")
    return {**server.env(), "BUCKET": server.bucket}
