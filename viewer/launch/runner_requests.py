"""The request file the web process writes for a runner: what to run, for which account (`ingester.runs.run_request`
reads it as untrusted input). Pure data, like `container_spec`.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath

from shared.accounts import DEFAULT_ACCOUNT, Refresh
from viewer.launch.launcher import LaunchCommand, LaunchError, LaunchRequest

REQUEST_VERSION = 1


def _relative_import(import_path: str | None) -> str:
    """The request's path inside the import folder, refused when it could leave it (the ingester checks again)."""
    if not import_path:
        raise LaunchError("an import needs a file", hint="choose a file from the import folder")
    relative = PurePosixPath(import_path)
    if relative.is_absolute() or ".." in relative.parts or "\x00" in import_path:
        raise LaunchError(f"{import_path!r} is not inside the import folder", hint="choose a file it lists")
    return relative.as_posix()


def request_document(request: LaunchRequest, *, now: float) -> bytes:
    """The run request file a runner reads (`ingester.runs.run_request` validates it as untrusted input)."""
    if request.command is LaunchCommand.ACCOUNT:
        return _settings_document(request, now=now)
    is_import = request.command is LaunchCommand.IMPORT
    document: dict[str, object] = {
        "version": REQUEST_VERSION,
        "command": str(request.command),
        "import_path": _relative_import(request.import_path) if is_import else None,
        "resume_run_id": int(request.resume_run_id) if request.resume_run_id is not None else None,
        "launch_token": request.launch_token,
        "written_at": round(now, 3),
    }
    if request.account != DEFAULT_ACCOUNT or request.unattended:  # absent: the default account, attended
        document["account"] = request.account
        document["unattended"] = request.unattended
    return json.dumps(document, sort_keys=True).encode()


def _settings_document(request: LaunchRequest, *, now: float) -> bytes:
    """An `account` request (run by an import runner): the account's new refresh interval and/or address."""
    if request.refresh is None and request.address is None:
        raise LaunchError("a settings change needs a refresh interval or an address", hint="choose one")
    try:
        refresh = str(Refresh(request.refresh)) if request.refresh is not None else None
    except ValueError:
        raise LaunchError(f"{request.refresh!r} is no refresh interval", hint="off, hourly or daily") from None
    document = {
        "version": REQUEST_VERSION,
        "command": str(LaunchCommand.ACCOUNT),
        "import_path": None,
        "resume_run_id": None,
        "launch_token": request.launch_token,
        "written_at": round(now, 3),
        "account": request.account,
        "unattended": False,
        "refresh": refresh,
        "address": request.address,
    }
    return json.dumps(document, sort_keys=True).encode()


def request_token(document: bytes) -> str | None:
    """The launch token of a request this viewer wrote earlier (to own its run again after a restart)."""
    try:
        token = json.loads(document).get("launch_token")
    except (ValueError, AttributeError):
        return None
    return token if isinstance(token, str) else None
