"""A user's own Python code named in sources.toml as `package.module:name` (a Python annotator's function, a plugin
step): found on the client before any compute, with one line naming the setting and the fix when it is not there;
loaded again on each Dask worker (the package must be importable there too); and fingerprinted by its module's
source, so that editing the code redoes what it made."""

import importlib
import importlib.util
import inspect
import re
import sys

from base.digests import file_digest, text_digest
from base.errors import UserError

REFERENCE = re.compile(r"^(?P<module>[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*):(?P<name>[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*)$")
IMPORTABLE = ("make its package importable where Loom runs and on every Dask worker (pip install it, or put its "
              "folder on PYTHONPATH before the workers start)")


def split_reference(reference, where: str) -> tuple[str, str]:
    """("package.module", "name") of a `package.module:name`; a UserError naming `where` for any other value."""
    match = REFERENCE.match(reference) if isinstance(reference, str) else None
    if not match:
        raise UserError(f"{where}: {reference!r} is not 'package.module:name' (a module path, a colon, then the "
                        "function or class in it)")
    return match["module"], match["name"]


def load_object(reference: str, where: str):
    """The function or class `package.module:name` names, imported; one line naming `where` when it cannot be."""
    module_name, name = split_reference(reference, where)
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - any failure to import is the user's module's, said in one line
        raise UserError(f"{where}: {reference!r} does not import ({type(err).__name__}: {err}); {IMPORTABLE}") from None
    target = module
    for part in name.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise UserError(f"{where}: module '{module_name}' has no '{name}'; name a function or class defined in it")
    if not callable(target):
        raise UserError(f"{where}: {reference!r} is a {type(target).__name__}, not a function or class")
    return target


def error_line(err: Exception) -> str:
    """What a user's code raised, on one line: its type and message (`KeyError: 'title'`)."""
    message = " ".join(str(err).split())
    return type(err).__name__ + (f": {message}" if message else "")


def instance(target):
    """A class made once (with no arguments: it loads its own models in __init__), or a function as it is."""
    return target() if inspect.isclass(target) else target


def source_digest(reference: str, where: str) -> str:
    """A digest of the source file of the module `reference` names (its bytes; for a module without a file, its
    name and version): what a stage's fingerprint holds, so editing the code redoes the stage."""
    module_name, _ = split_reference(reference, where)
    load_object(reference, where)
    module = sys.modules[module_name]
    path = getattr(module, "__file__", None)
    if path:
        return file_digest(path)
    return text_digest(module_name, str(getattr(module, "__version__", "")))
