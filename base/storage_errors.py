"""An object store refusing us (no such endpoint or bucket, wrong or missing credentials, a missing fsspec driver) as
one UserError line that names where and the fix, raised before a reader takes a refusal for an empty workspace."""

from contextlib import contextmanager

from base.errors import UserError
from base.store import as_path, fs_and_path, is_remote


@contextmanager
def storage_errors(where):
    """An object store refusing us (no such endpoint, wrong or missing credentials) as one UserError line that
    names `where` and the fix; the reason is the store's own words, which never hold a secret."""
    try:
        yield
    except Exception as err:
        refusal = storage_refusal(err, where)
        if refusal is None:
            raise
        raise refusal from None


def storage_refusal(err: Exception, where):
    """The UserError that says `err` in one line, when it is an object store refusing us; else None."""

    if not _is_storage_error(err):
        return None
    if isinstance(err, ImportError):  # fsspec's "Please install gcsfs to access Google Storage"
        return UserError(f"cannot use {where}: {err} (pip install it into Loom's environment)")
    if isinstance(err, FileNotFoundError):
        return UserError(f"cannot use {where}: {err}; create the bucket, or fix the URL")
    reason = "access denied" if isinstance(err, PermissionError) else type(err).__name__
    detail = str(err).strip() or reason
    return UserError(f"cannot use {where}: {reason} ({detail}); check the endpoint (AWS_ENDPOINT_URL, or "
                     "`endpoint_url` in a source's storage_options) and the credentials (AWS_ACCESS_KEY_ID and "
                     "AWS_SECRET_ACCESS_KEY, ~/.aws, or storage_options)")


def _is_storage_error(err: BaseException) -> bool:
    missing_bucket = isinstance(err, FileNotFoundError) and "bucket does not exist" in str(err)
    missing_driver = isinstance(err, ImportError) and "to access" in str(err)
    refused = isinstance(err, PermissionError) and err.filename is None  # s3fs's refusal, not a local file's
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        return missing_bucket or missing_driver or refused
    return isinstance(err, (BotoCoreError, ClientError)) or missing_bucket or missing_driver or refused


def check_reachable(root) -> None:
    """Lists a workspace on a store once, so that a refusal (no credentials, a wrong key or endpoint, no such bucket)
    is raised for `storage_errors` to word before a reader takes it for an empty workspace. A prefix with nothing
    under it yet passes, as does a local path."""
    root = as_path(root)
    if is_remote(root):
        fs, spelled = fs_and_path(root)
        try:
            fs.ls(spelled)
        except FileNotFoundError as err:
            if "bucket does not exist" in str(err):
                raise
