"""A viewer's run request, read as untrusted input: the `run-request KIND [SLOT]` command of a runner container, and the
confinement of an import path to the import folder (`--confine-to`) that both launchers ask for.

Nothing here trusts the viewer: the request has a strict schema, and an import path must name a regular file under
the import folder reached without following any symbolic link (`O_NOFOLLOW` on every component).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from shared.account_store import is_address
from shared.accounts import DEFAULT_ACCOUNT, Refresh, is_name
from shared.errors import InputFileError, UsageError
from shared.launch_request import REQUEST_VERSION, LaunchCommand, LaunchRequest

COMMAND = "run-request"
REQUESTS_DIR = Path("/requests")
IMPORTS_DIR = Path("/imports")
MAX_REQUEST_BYTES = 4096
# A request is written just before its runner starts; an older one was left behind, never run again.
MAX_REQUEST_AGE_SECONDS = 300.0
_KEYS = frozenset({"version", "command", "import_path", "resume_run_id", "launch_token", "written_at"})
# Written only for another account than the default, or an unattended scan (a scheduled refresh).
_ACCOUNT_KEYS = frozenset({"account", "unattended"})
# An `account` request (a settings change from the page, run by an import runner) has them all, and these two.
_SETTING_KEYS = frozenset({"refresh", "address"})
_REFRESH: tuple[str, ...] = tuple(Refresh)
_TOKEN = re.compile(r"^[0-9a-f]{32}$")
_MAX_RUN_ID = 2**63 - 1
_MAX_PATH = 1024
# A runner's place in its kind's pool past the first (`run-request scan 2` reads `/requests/scan-2.json`).
_SLOT = re.compile(r"^(?:[2-9]|[1-9][0-9])$")


def parse_request(data: bytes, *, kind: str, now: float) -> LaunchRequest:
    """The request a runner of `kind` may run; raises `UsageError` on anything else."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"the run request is not JSON: {exc}") from exc
    except RecursionError:  # `[[[…]]]` nested deeper than the parser's stack
        raise UsageError("the run request is not a flat JSON object (nested too deep)") from None
    if isinstance(document, dict) and kind == "import" and document.get("command") == "account":
        return _parse_settings(document, now=now)
    if not isinstance(document, dict) or set(document) not in (_KEYS, _KEYS | _ACCOUNT_KEYS):
        raise UsageError(f"the run request must have exactly the keys {sorted(_KEYS)} (and {sorted(_ACCOUNT_KEYS)})")
    account = document.get("account", DEFAULT_ACCOUNT)
    unattended = document.get("unattended", False)
    if not isinstance(account, str) or not is_name(account):
        raise UsageError("the run request's account must be an account name (1-32 of a-z, 0-9, _ and -)")
    if type(unattended) is not bool or (unattended and kind != "scan"):
        raise UsageError("the run request's unattended must be true or false (true for a scan only)")
    # `type(…) is int`: JSON's `true` and `1.0` compare equal to 1 in Python, and are not version 1.
    if type(document["version"]) is not int or document["version"] != REQUEST_VERSION or document["command"] != kind:
        raise UsageError(f"this runner runs version {REQUEST_VERSION} `{kind}` requests only")
    token = _checked_token(document, now=now)
    resume = document["resume_run_id"]
    if resume is not None and (
        isinstance(resume, bool) or not isinstance(resume, int) or not 0 < resume <= _MAX_RUN_ID
    ):
        raise UsageError("the run request's resume_run_id must be a positive 64-bit run id or null")
    path = document["import_path"]
    if kind == "import":
        if not isinstance(path, str) or not 0 < len(path) <= _MAX_PATH:
            raise UsageError("an import request needs import_path, a path relative to the import folder")
        try:
            _relative_parts(path)
        except InputFileError as exc:  # a malformed request, not a bad file: exit 2 like every other refusal
            raise UsageError(f"the run request's import_path: {exc}") from None
    elif path is not None:
        raise UsageError("a scan request has no import_path")
    return LaunchRequest(
        command=LaunchCommand(kind),
        launch_token=token,
        import_path=path,
        resume_run_id=resume,
        account=account,
        unattended=unattended,
    )


def _checked_token(document: dict[str, object], *, now: float) -> str:
    """The request's launch token, once its token and its age are checked."""
    token = document["launch_token"]
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise UsageError("the run request's launch_token must be 32 lowercase hex digits")
    written = document["written_at"]
    if (
        isinstance(written, bool)
        or not isinstance(written, int | float)
        or not -60 < now - written < MAX_REQUEST_AGE_SECONDS
    ):
        raise UsageError("the run request is stale (or from the future); the viewer writes a new one per launch")
    return token


def _parse_settings(document: dict[str, object], *, now: float) -> LaunchRequest:
    """An `account` request: an account's new refresh interval and/or Gmail address, and nothing to import."""
    if set(document) != _KEYS | _ACCOUNT_KEYS | _SETTING_KEYS:
        raise UsageError(f"an account request has exactly the keys {sorted(_KEYS | _ACCOUNT_KEYS | _SETTING_KEYS)}")
    if type(document["version"]) is not int or document["version"] != REQUEST_VERSION:
        raise UsageError(f"this runner runs version {REQUEST_VERSION} requests only")
    account, refresh, address = document["account"], document["refresh"], document["address"]
    if not isinstance(account, str) or not is_name(account):
        raise UsageError("the run request's account must be an account name (1-32 of a-z, 0-9, _ and -)")
    if (document["import_path"], document["resume_run_id"], document["unattended"]) != (None, None, False):
        raise UsageError("an account request has no import_path or resume_run_id and is never unattended")
    if refresh is not None and refresh not in _REFRESH:
        raise UsageError(f"the run request's refresh must be one of {', '.join(_REFRESH)} or null")
    if address is not None and (not isinstance(address, str) or not is_address(address.strip())):
        raise UsageError("the run request's address must be an email address or null")
    if refresh is None and address is None:
        raise UsageError("an account request changes the refresh interval, the address or both")
    token = _checked_token(document, now=now)
    return LaunchRequest(LaunchCommand.ACCOUNT, token, account=account, refresh=refresh, address=address)


def _relative_parts(path: str) -> tuple[str, ...]:
    """The plain components of a relative path; refuses absolute paths, `..`, `.`, empty parts and NUL."""
    parts = tuple(path.split("/"))
    if "\x00" in path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise InputFileError(f"{path!r} is not a plain path inside the import folder")
    return parts


def confine(root: Path, path: Path) -> Path:
    """`path`, which must lie under `root` lexically and be a regular file reached from `root` without following
    any symbolic link; raises `InputFileError` otherwise. (`root` itself may be a link: it is configuration.)"""
    confined, fd = open_confined(root, path)
    os.close(fd)
    return confined


def open_confined(root: Path, path: Path) -> tuple[Path, int]:
    """`confine`, keeping the file open: its path and a read-only descriptor of the very file that was checked.

    Reading through the descriptor (`pinned_path`) instead of the name leaves no window between the check and
    the import in which a swapped name could lead elsewhere.
    """
    try:
        relative = PurePosixPath(path).relative_to(PurePosixPath(root))
    except ValueError:
        raise InputFileError(f"{path}: not inside the import folder {root}") from None
    parts = _relative_parts(relative.as_posix())
    folders: list[int] = []
    fd = -1
    try:
        folders.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        for part in parts[:-1]:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            folders.append(os.open(part, flags, dir_fd=folders[-1]))
        # O_NONBLOCK: a FIFO planted at the path must not hang the runner; O_NOFOLLOW: no link as the last part.
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folders[-1])
        info = os.fstat(fd)
    except OSError as exc:
        if fd >= 0:
            os.close(fd)
        raise InputFileError(f"{path}: cannot open it inside {root} without following a link ({exc.strerror})") from exc
    finally:
        for folder in folders:
            os.close(folder)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise InputFileError(f"{path}: not a regular file")
    return Path(root) / relative, fd


def pinned_path(fd: int) -> Path | None:
    """A name for the open file `fd` that this process and its parse workers can open: `/proc/PID/fd/N` reopens
    that very file (Linux), never whatever a name points to now. None where there is no such `/proc`."""
    pinned = Path(f"/proc/{os.getpid()}/fd/{fd}")
    try:
        same = os.stat(pinned)
    except OSError:
        return None
    info = os.fstat(fd)
    return pinned if (same.st_dev, same.st_ino) == (info.st_dev, info.st_ino) else None


def _read_request(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UsageError(f"no run request at {path}; runners are started by the viewer") from None
    except OSError as exc:
        raise UsageError(f"cannot read the run request {path}: {exc.strerror}") from exc
    try:
        # Checked on the descriptor before it becomes a file object, which refuses a directory with a traceback.
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"the run request {path} is not a regular file; runners are started by the viewer")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_REQUEST_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read the run request {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    if len(data) > MAX_REQUEST_BYTES:
        raise UsageError(f"the run request is larger than {MAX_REQUEST_BYTES} bytes")
    return data


def expand(
    argv: Sequence[str],
    *,
    now: Callable[[], float],
    requests_dir: Path = REQUESTS_DIR,
    imports_dir: Path = IMPORTS_DIR,
) -> list[str]:
    """`run-request import|scan [SLOT]` becomes the command line its request asks for (the request of the runner
    in that place of its kind's pool: `KIND.json` for the first, `KIND-SLOT.json` after it); any other argv is
    returned as is."""
    if not argv or argv[0] != COMMAND:
        return list(argv)
    if len(argv) not in (2, 3) or argv[1] not in ("import", "scan") or not _SLOT.fullmatch((argv[2:] or ["2"])[0]):
        raise UsageError(f"usage: gmail-stats {COMMAND} import|scan [2-99]")
    kind = argv[1]
    name = f"{kind}-{argv[2]}.json" if len(argv) == 3 else f"{kind}.json"
    request = parse_request(_read_request(requests_dir / name), kind=kind, now=now())
    if request.import_path is not None:
        confine(imports_dir, imports_dir / request.import_path)  # refused when it leaves the folder or follows a link
    # `gmail-stats account` records no run row and takes no `--launch-token`.
    token = [] if request.command is LaunchCommand.ACCOUNT else ["--launch-token", request.launch_token]
    return [*request.argv(import_dir=imports_dir), *token, "--quiet"]
