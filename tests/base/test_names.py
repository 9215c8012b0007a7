"""Names that become folders (sources, mixtures, runs) follow one rule and cannot leave the workspace; a spec's
numbers are finite; a workspace whose path has quotes, spaces and non-ASCII letters works end to end."""

import pytest

from helpers import compiled, TINY_MODEL, copy_curated, run_loom, write_spec
from base.errors import UserError
from base.names import check_name

TINY = """seq_len = 32
global_batch = 8
steps = 12
[weights]
web = 0.5
docs = 0.5
"""
SMALL = [*TINY_MODEL, "--checkpoint-every", 6, "--eval-every", 6,
         "--report-every", 6, "--warmup-steps", 2]


@pytest.fixture(scope="module")
def odd_ws(tmp_path_factory, curated_slice, slice_tokenizer):
    """The curated slice in a workspace whose path has a quote, a double quote, spaces and non-ASCII letters,
    with mixture `tiny` built and a 6-step run `first` trained in it."""
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("names") / "it's a \"wörk\" space")
    write_spec(ws, "tiny", TINY)
    run_loom("-w", ws, "mix", "build", "tiny")
    run_loom("-w", ws, "train", "--mixture", "tiny", "--run-name", "first", "--max-steps", 6, *SMALL)
    return ws


def one_line_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def tree(folder) -> set:
    return {p.relative_to(folder) for p in folder.rglob("*")}


@pytest.mark.parametrize("name", ["web", "tiny-moe", "run_2", "a" * 64])
def test_a_name_of_lowercase_letters_digits_and_dashes_is_accepted(name):
    assert check_name("run", name) == name


@pytest.mark.parametrize("name", ["..", ".", "../../x", "/tmp/x", "a/b", "Web", "v1.2", "", "a b", "ü", "a" * 65,
                                  None, 3])
def test_a_name_that_could_leave_its_folder_is_one_line_naming_the_rule_and_a_fix(name):
    with pytest.raises(UserError) as raised:
        check_name("run", name, "--run-name")
    message = str(raised.value)
    assert message.startswith(f"--run-name: run name {name!r} is invalid") and "\n" not in message
    assert "lowercase letters, digits, '_' or '-'" in message and "rename it, e.g. '" in message


def test_the_odd_workspace_path_builds_trains_and_reports(odd_ws):
    assert (compiled(odd_ws, "tiny") / "schedule.json").is_file()
    assert len((odd_ws / "runs" / "first" / "metrics.jsonl").read_text().splitlines()) == 6
    reported = run_loom("-w", odd_ws, "report", "run", "first")
    assert "report.html" in reported.stdout and (odd_ws / "runs" / "first" / "report.html").is_file()
    assert "first" in run_loom("-w", odd_ws, "sql", "SELECT run FROM runs").stdout


ESCAPES = [
    (["train", "--mixture", "tiny", "--run-name", "../../escaped"], "--run-name: run name '../../escaped' is invalid"),
    (["train", "--mixture", "tiny", "--run-name", "{around}/escaped"], "--run-name: run name '{around}/escaped' is"),
    (["train", "--mixture", "../tiny"], "--mixture: mixture name '../tiny' is invalid"),
    (["mix", "build", "../escaped"], "mixture name '../escaped' is invalid"),
    (["mix", "show", "../tiny"], "mixture name '../tiny' is invalid"),
    (["report", "mixture", "../mixtures/tiny"], "mixture name '../mixtures/tiny' is invalid"),
    (["report", "run", "../runs/first"], "run name '../runs/first' is invalid"),
]


@pytest.mark.parametrize("args, message", ESCAPES, ids=[" ".join(a[:2]) + f" {i}" for i, (a, _) in enumerate(ESCAPES)])
def test_a_name_that_leaves_the_workspace_is_refused_before_anything_is_written(odd_ws, args, message):
    around = odd_ws.parent
    before = tree(around)
    args = [a.format(around=around) for a in args]
    assert message.format(around=around) in one_line_error(run_loom("-w", odd_ws, *args, check=False))
    assert tree(around) == before


def test_a_spec_named_dot_dot_writes_nothing_into_the_workspace_root(odd_ws, tmp_path):
    spec = tmp_path / "up.toml"
    spec.write_text('name = ".."\n' + TINY)
    before = tree(odd_ws.parent)
    line = one_line_error(run_loom("-w", odd_ws, "mix", "build", spec, check=False))
    assert "`name`: mixture name '..' is invalid" in line and str(spec) in line
    assert tree(odd_ws.parent) == before and not (odd_ws / "schedule.json").exists()


BAD_NUMBERS = [
    ("code = nan", "the weight of 'code' is nan; a weight is a finite number >= 0"),
    ("code = inf", "the weight of 'code' is inf"),
    ("code = -inf", "the weight of 'code' is -inf"),
    ("code = -0.5", "the weight of 'code' is negative"),
    ("code = true", "the weight of 'code' is True"),
    ("max_epochs = nan", "`max_epochs` = nan must be a positive, finite number"),
    ("max_epochs = inf", "`max_epochs` = inf must be a positive, finite number"),
    ("tokenizer = \"../models/tokenizer.json\"", "`tokenizer` = '../models/tokenizer.json' leaves the workspace"),
    ("tokenizer = \"/etc/passwd\"", "`tokenizer` = '/etc/passwd' leaves the workspace"),
]


@pytest.mark.parametrize("line, message", BAD_NUMBERS, ids=[b[0] for b in BAD_NUMBERS])
def test_a_non_finite_or_escaping_spec_value_is_one_line_naming_the_field(odd_ws, tmp_path, line, message):
    # a top-level key goes before the tables, a weight into [weights]
    body = TINY + line + "\n" if line.startswith("code") else line + "\n" + TINY
    spec = tmp_path / "bad.toml"
    spec.write_text('name = "bad"\n' + body)
    assert message in one_line_error(run_loom("-w", odd_ws, "mix", "build", spec, check=False))
    assert not (odd_ws / "mixtures" / "bad").exists()


@pytest.mark.parametrize("phases, message", [
    ('{name = "a", fraction = nan, weights = {web = 1}}, {name = "b", fraction = 1, weights = {docs = 1}}',
     "phase #1 ('a'): `fraction` must be in (0, 1]"),
    ('{name = "a", fraction = 1, weights = {web = nan}}', "the weight of 'web' is nan"),
], ids=["fraction", "phase weight"])
def test_non_finite_numbers_in_phases_are_one_line(odd_ws, tmp_path, phases, message):
    spec = tmp_path / "phased.toml"
    spec.write_text(f'name = "phased"\nseq_len = 32\nglobal_batch = 8\nsteps = 12\nphase = [{phases}]\n')
    assert message in one_line_error(run_loom("-w", odd_ws, "mix", "build", spec, check=False))


@pytest.mark.parametrize("option", [["--lr", "nan"], ["--grad-clip", "inf"]])
def test_a_non_finite_training_option_is_one_line(odd_ws, option):
    line = one_line_error(run_loom("-w", odd_ws, "train", "--mixture", "tiny", "--run-name", "nan", *option,
                                   check=False))
    assert f"{option[0]} is {option[1]}; give a finite number" in line
    assert not (odd_ws / "runs" / "nan").exists()
