"""Options several commands share, the workspace files they default to, and options that name an entry of a
registry (their choices and help read from it only when used)."""

import importlib
from pathlib import Path

import click

from base.store import as_path
from base.workspace import SOURCES_FILE, Workspace

sources_option = click.option("--sources", metavar="FILE", help=f"Sources config [default: WORKSPACE/{SOURCES_FILE}]")
workers_option = click.option("--workers", type=click.IntRange(min=1),
                              help="Local worker processes [default: one per core]")


def sources_path(ws: Workspace, value: str | None) -> Path:
    return as_path(value) if value else ws.sources_file


force_option = click.option("--force", is_flag=True, help="Replace the file --output names if it exists")


def named_output(value: str, force: bool):
    """The file --output names, checked by base.outputs' rules: an existing file needs --force, a symbolic link
    is followed, a device or folder is refused. (A workspace's own model, the default, is simply replaced.)"""
    from base.outputs import file_to_write

    return file_to_write(as_path(value), "--output", force)


def tokenizer_path(ws: Workspace, value: str | None) -> Path:
    return as_path(value) if value else ws.tokenizer


def registry(path: str) -> dict:
    """A registry named as "module:NAME": a map from a name to an object with its `help` (FILTERS, READERS,
    SURROGATES, DESIGNS, FORMATS), imported only when asked for."""
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def registry_help(path: str) -> str:
    """Each name of a registry with its help, as an option's help or a command's epilog lists them."""
    return "; ".join(f"{name}: {entry.help}" for name, entry in registry(path).items())


class RegistryChoice(click.Choice):
    """A name of a registry, its choices read from the registry when the option is parsed or shown, so that
    `loom --help` imports none of the packages behind them."""

    def __init__(self, path: str):  # click.Choice's own __init__ would read the choices now
        self.path, self.case_sensitive = path, True

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(registry(self.path))


class RegistryOption(click.Option):
    """An option naming an entry of a registry (`registry="module:NAME"`): its help ends with each entry's name
    and help, read when shown; with `choice` (the default) click refuses another name, else the command does."""

    def __init__(self, *args, registry: str, choice: bool = True, **kwargs):
        self.registry = registry
        if choice:
            kwargs["type"] = RegistryChoice(registry)
        super().__init__(*args, **kwargs)

    @property
    def help(self) -> str:
        return f"{self.intro} ({registry_help(self.registry)})"

    @help.setter
    def help(self, value: str) -> None:
        self.intro = value
