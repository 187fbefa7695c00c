"""Starting, cancelling and inspecting ingesters on behalf of the page; the viewer itself never writes the database.

A launch is owned by this viewer when it carries a launch token this viewer issued (or adopted after a restart).
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from shared.account_store import read_settings
from shared.accounts import DEFAULT_ACCOUNT
from shared.errors import ErrorKind
from shared.lock import is_lock_held
from shared.resume import CommandStyle, resume_command
from shared.runs import Run, get_run, run_by_launch_token
from shared.schema.models import RunState, Source
from viewer.errors import ApiError
from viewer.launch.consent_paste import ACCEPTED, NOT_THIS_CONSENT, BadPaste, awaited_consent, deliver, parse_pasted
from viewer.launch.imports import relative_to_import_dir, resolve_import
from viewer.launch.launcher import LaunchCommand, Launched, Launcher, LaunchError, LaunchRequest
from viewer.query.database import Database
from viewer.settings import ViewerSettings

_POLL_SECONDS = 0.05
# The listener answers within a second (ingester/gmail/consent.py); a little more for a loaded machine.
_CONSENT_DELIVERY_TIMEOUT = 10.0
_REAP_EVERY_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class LaunchAsk:
    """A validated-at-the-edge launch request from the page."""

    source: str
    path: str | None = None
    resume_run_id: int | None = None
    unattended: bool = False  # a scheduled refresh: the scan fails with auth_required rather than wait for consent


class RunControl:
    def __init__(
        self,
        *,
        settings: ViewerSettings,
        database: Database,
        launcher: Launcher,
        account: str = DEFAULT_ACCOUNT,
        base_db: Path | None = None,
    ) -> None:
        self.account = account
        self.base_db = (
            base_db if base_db is not None else settings.db
        )  # the default account's file  # `settings.db` is this account's own file (`shared.accounts.account_file`)
        self.settings = settings
        self.database = database
        self.launcher = launcher
        self._owned: dict[str, Launched] = {}
        self._launch_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._last_reap = 0.0

    def adopt(self) -> None:
        for launched in self.launcher.adopt():
            with self._state_lock:
                self._owned[launched.launch_token] = launched

    def owns(self, run: Run | None) -> Launched | None:
        if run is None or run.launch_token is None:
            return None
        with self._state_lock:
            return self._owned.get(run.launch_token)

    def runner_alive(self, run: Run) -> bool:
        """The process or container this viewer started for `run` is still running (False if it started none)."""
        launched = self.owns(run)
        return launched is not None and self.launcher.is_alive(launched)

    def reap_due(self) -> bool:
        return time.monotonic() - self._last_reap >= _REAP_EVERY_SECONDS

    def reap(self) -> None:
        now = time.monotonic()
        if now - self._last_reap < _REAP_EVERY_SECONDS:
            return
        self._last_reap = now
        self.launcher.reap()

    # -- launching -----------------------------------------------------------------------------------------------

    def launch(self, ask: LaunchAsk) -> int | None:
        """Starts an ingester and returns its run id (None if it had not written its row within the wait)."""
        request = self._request(ask)
        # One launch at a time from this viewer; the ingest lock settles races with terminals and other viewers.
        with self._launch_lock:
            if is_lock_held(self.settings.db):
                raise ApiError(409, ErrorKind.RUN_ACTIVE, "an ingester is already running; wait for it or cancel it")
            try:
                launched = self.launcher.launch(request)
            except LaunchError as exc:
                raise ApiError(500, ErrorKind.SPAWN_FAILED, str(exc), hint=exc.hint) from exc
            with self._state_lock:
                self._owned[launched.launch_token] = launched
            return self._wait_for_row(launched)

    def change_settings(self, *, refresh: str | None, address: str | None) -> None:
        """Launches `gmail-stats account` to store this account's refresh interval or Gmail address, and waits
        for it to end: the viewer never writes them itself. Raises `ApiError` when the change did not happen."""
        request = LaunchRequest(
            command=LaunchCommand.ACCOUNT,
            launch_token=secrets.token_hex(16),
            account=self.account,
            refresh=refresh,
            address=address,
        )
        with self._launch_lock:
            if is_lock_held(self.settings.db):
                raise ApiError(409, ErrorKind.RUN_ACTIVE, "an ingester is running for this account; change it after")
            try:
                launched = self.launcher.launch(request)
            except LaunchError as exc:
                raise ApiError(500, ErrorKind.SPAWN_FAILED, str(exc), hint=exc.hint) from exc
            deadline = time.monotonic() + self.settings.run_row_wait_seconds
            while self.launcher.is_alive(launched) and time.monotonic() < deadline:
                time.sleep(_POLL_SECONDS)
            tail = self.launcher.log_tail(launched, lines=1)
        stored_refresh, stored_address = self._stored()
        if (refresh is not None and stored_refresh != refresh) or (
            address is not None and stored_address != address.strip().lower()
        ):
            raise ApiError(
                500,
                ErrorKind.SPAWN_FAILED,
                "the ingester did not store the change",
                hint=tail[-1] if tail else "run `gmail-stats account` in a terminal to see why",
            )

    def _stored(self) -> tuple[str | None, str | None]:
        """The stored refresh interval and address (None, None before the account has a database)."""
        if not self.database.exists():
            return None, None
        with self.database.connect() as conn:
            values = read_settings(conn) if self.database.schema_ready(conn) else None
        if values is None:
            return None, None
        return str(values.refresh), values.gmail_address

    def _request(self, ask: LaunchAsk) -> LaunchRequest:
        if ask.source not in (Source.MBOX, Source.GMAIL_API):
            raise ApiError(422, ErrorKind.BAD_SOURCE, "source must be `mbox` or `gmail_api`")
        command = LaunchCommand.IMPORT if ask.source == Source.MBOX else LaunchCommand.SCAN
        token = secrets.token_hex(16)
        if ask.resume_run_id is not None:
            return self._resume_request(ask, command, token)
        if command is LaunchCommand.SCAN:
            return LaunchRequest(command=command, launch_token=token, account=self.account, unattended=ask.unattended)
        if ask.path is None:
            raise ApiError(422, ErrorKind.BAD_PATH, "an import needs `path`, a file listed by /api/imports")
        resolved = self._resolved_import(ask.path)
        return LaunchRequest(command=command, launch_token=token, import_path=resolved, account=self.account)

    def _resume_request(self, ask: LaunchAsk, command: LaunchCommand, token: str) -> LaunchRequest:
        run_id = ask.resume_run_id
        assert run_id is not None
        run = None
        if self.database.exists():
            with self.database.connect() as conn:
                if self.database.schema_ready(conn):
                    run = get_run(conn, run_id)
        if run is None:
            raise ApiError(422, ErrorKind.BAD_RESUME, f"there is no run {run_id}")
        if run.source != ask.source:
            raise ApiError(422, ErrorKind.BAD_RESUME, f"run {run_id} is a {run.source} run, not {ask.source}")
        if run.is_open and is_lock_held(self.settings.db):
            raise ApiError(409, ErrorKind.RUN_ACTIVE, f"run {run_id} is still running")
        if run.state == RunState.DONE:  # the ingester refuses it too: there is nothing left to continue
            verb = "import" if command is LaunchCommand.IMPORT else "scan"
            raise ApiError(422, ErrorKind.BAD_RESUME, f"run {run_id} already finished; start a new {verb} instead")
        if command is LaunchCommand.SCAN:
            return LaunchRequest(command=command, launch_token=token, resume_run_id=run_id, account=self.account)
        relative = relative_to_import_dir(
            self.settings.import_dir, run.mbox_path or "", host_dir=self.settings.host_import_dir
        )
        if relative is None:
            style = self.settings.command_style
            terminal = resume_command(
                source=Source.MBOX,
                run_id=run_id,
                style=style,
                mbox_path=run.mbox_path,
                db=str(self.base_db) if style == CommandStyle.CLI else None,
                account=None if self.account == DEFAULT_ACCOUNT else self.account,
            )
            raise ApiError(
                422,
                ErrorKind.BAD_RESUME,
                f"run {run_id} read a file outside the import folder; resume it in a terminal with `{terminal}`",
            )
        resolved = self._resolved_import(relative)
        return LaunchRequest(
            command=command, launch_token=token, import_path=resolved, resume_run_id=run_id, account=self.account
        )

    def _resolved_import(self, relative: str) -> str:
        """The checked file's real path relative to the real import folder: the ingester is handed what was
        checked, never a name a link swapped in later could redirect (it refuses links itself, too)."""
        target = resolve_import(self.settings.import_dir, relative)
        return target.relative_to(self.settings.import_dir.resolve()).as_posix()

    def _wait_for_row(self, launched: Launched) -> int | None:
        deadline = time.monotonic() + self.settings.run_row_wait_seconds
        while True:
            run = self._run_for(launched.launch_token)
            if run is not None:
                return run.run_id
            if not self.launcher.is_alive(launched):
                run = self._run_for(launched.launch_token)  # it may have finished between the two looks
                if run is not None:
                    return run.run_id
                if is_lock_held(self.settings.db):
                    raise ApiError(
                        409, ErrorKind.RUN_ACTIVE, "another ingester started first; wait for it or cancel it"
                    )
                tail = self.launcher.log_tail(launched, lines=1)
                raise ApiError(
                    500,
                    ErrorKind.SPAWN_FAILED,
                    "the ingester stopped before it started a run",
                    hint=tail[-1] if tail else "run the same command in a terminal to see why",
                )
            if time.monotonic() >= deadline:
                return None
            time.sleep(_POLL_SECONDS)

    def _run_for(self, token: str) -> Run | None:
        if not self.database.exists():
            return None
        try:
            with self.database.connect() as conn:
                return run_by_launch_token(conn, token) if self.database.schema_ready(conn) else None
        except ApiError:
            return None  # mid-migration or busy: look again

    # -- owned runs ----------------------------------------------------------------------------------------------

    def _owned_run(self, run_id: int) -> tuple[Run | None, Launched | None]:
        if not self.database.exists():
            return None, None
        with self.database.connect() as conn:
            run = get_run(conn, run_id) if self.database.schema_ready(conn) else None
        return run, self.owns(run)

    def cancel(self, run_id: int) -> None:
        run, launched = self._owned_run(run_id)
        if run is None or launched is None:
            raise ApiError(409, ErrorKind.NOT_OWNED, "this run was started elsewhere; cancel it where it was started")
        if not self.launcher.is_alive(launched):
            raise ApiError(409, ErrorKind.NOT_RUNNING, f"run {run_id} is not running any more")
        self.launcher.cancel(launched, grace_seconds=self.settings.cancel_grace_seconds)

    def log(self, run_id: int) -> list[str]:
        run, launched = self._owned_run(run_id)
        if run is None or launched is None:
            raise ApiError(404, ErrorKind.NOT_OWNED, "only the log of a run started from this viewer is available")
        return self.launcher.log_tail(launched)

    # -- consent pasted on the page ------------------------------------------------------------------------------

    def paste_consent(self, run_id: int, address: str) -> None:
        """Hands a pasted redirect address to the scan waiting for consent (see `viewer.launch.consent_paste`)."""
        run, launched = self._owned_run(run_id)
        awaited = awaited_consent(run.auth_url) if run is not None else None
        if run is None or run.state != RunState.AWAITING_AUTH or awaited is None or not is_lock_held(self.settings.db):
            raise ApiError(409, ErrorKind.NOT_RUNNING, f"run {run_id} is not waiting for consent")
        try:
            pasted = parse_pasted(address)
        except BadPaste as exc:
            raise ApiError(422, ErrorKind.BAD_REQUEST, str(exc)) from exc
        if pasted.state != awaited.state:
            raise ApiError(
                422,
                ErrorKind.BAD_REQUEST,
                "that address is from another consent (its state differs); open the consent page again, allow "
                "access and paste the address the browser ends on",
            )
        try:
            host, port = self.launcher.consent_listener(launched, redirect_port=awaited.port)
        except LaunchError as exc:
            raise ApiError(409, ErrorKind.NOT_OWNED, str(exc), hint=exc.hint) from exc
        try:
            status = deliver(pasted, host=host, port=port, timeout=_CONSENT_DELIVERY_TIMEOUT)
        except OSError as exc:
            raise ApiError(409, ErrorKind.NOT_RUNNING, f"run {run_id} is no longer waiting for consent") from exc
        if status == NOT_THIS_CONSENT:
            raise ApiError(422, ErrorKind.BAD_REQUEST, "the scan refused that address: it is not from this consent")
        if status != ACCEPTED:
            raise ApiError(409, ErrorKind.NOT_RUNNING, f"the scan's consent listener answered HTTP {status}")
