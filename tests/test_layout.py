"""The layout stays true: imports flow one way between Loom's packages, with no cycles, read from the source
with `ast` (imports inside functions count too), and no source file grows past what a reader takes in."""

import ast
from pathlib import Path

from conftest import REPO

# Lowest first. A module may import modules of its own package or of a package below it, never above.
LAYERS = (
    ("loom",),  # the base: errors, io, workspace, sql (every loom module but the CLI)
    ("curation",),
    ("mixtures",),
    ("trainer",),
    ("reports", "sweeps"),
    ("loom.cli",),
)
PACKAGES = ("loom", "curation", "mixtures", "trainer", "reports", "sweeps")
MAX_LINES = 400


def package_of(module: str) -> str:
    if module in ("loom.cli", "loom.__main__") or module.startswith("loom.cli."):
        return "loom.cli"  # the top: `loom` and `python -m loom`
    return module.split(".")[0]


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
