"""Starting, cancelling and inspecting ingesters on behalf of the page; the viewer itself never writes the database.

A launch is owned by this viewer when it carries a launch token this viewer issued (or adopted after a restart).
A run's true state is derived read-only from its row, the ingest lock and the launcher: a run left `running` by a
killed ingester stays so until the next ingester marks it `abandoned`; until then the page says it stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, func, select

from shared.account_store import read_settings
from shared.accounts import DEFAULT_ACCOUNT
from shared.errors import ErrorKind
from shared.launch_request import LaunchCommand, LaunchRequest
from shared.lock import is_lock_held
from shared.resume import CommandStyle, resume_command
from shared.runs import Run, get_run, run_by_launch_token
from shared.schema.models import RunState, Source, gmail_retry
from viewer.errors import ApiError
from viewer.launch.consent_paste import BadPaste, awaited_consent, deliver, parse_pasted
from viewer.launch.imports import relative_to_import_dir, resolve_import
from viewer.launch.launcher import Launched, Launcher, LaunchError
from viewer.query.database import Database
from viewer.settings import ViewerSettings

_POLL_SECONDS = 0.05
_REAP_EVERY_SECONDS = 5.0


def stopped_unexpectedly(run: Run, *, lock_held: bool, runner_alive: bool) -> bool:
    """An open row nobody is running: no ingester holds the lock (the kernel drops it when a process dies) and
    the runner this viewer started, if any, has exited (a lock on a filesystem that does not share `flock`s with
    the runner's must not make a live run look dead)."""
    return run.is_open and not lock_held and not runner_alive


def unfetched_by_run(conn: Connection) -> dict[int, int]:
    """Messages a scan listed but could not fetch, by the run that last tried them; the next scan retries them.
    Read from a ready schema only, which has the retry table (migration 4)."""
    rows = conn.execute(
        select(gmail_retry.c.run_id, func.count())
        .where(gmail_retry.c.run_id.is_not(None))
        .group_by(gmail_retry.c.run_id)
    )
    return {int(run_id): int(count) for run_id, count in rows}


class RunControl:
    def __init__(
        self, *, settings: ViewerSettings, database: Database, launcher: Launcher, account: str, base_db: Path
    ) -> None:
        self.account = account
        self.base_db = base_db  # the default account's file; `settings.db` is this account's own
        self.settings = settings
        self.database = database
        self.launcher = launcher
        self._owned: dict[str, Launched] = {}
        self._launch_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._last_reap = 0.0

    def adopt(self) -> None:
        adopted = {launched.launch_token: launched for launched in self.launcher.adopt()}
        with self._state_lock:
            self._owned.update(adopted)

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
        if self.reap_due():
            self._last_reap = time.monotonic()
            self.launcher.reap()

    # -- launching -----------------------------------------------------------------------------------------------

    @contextmanager
    def _launching(self, request: LaunchRequest, *, busy: str) -> Iterator[Launched]:
        """Starts `request` and holds the launch lock while the caller waits on it; `busy` is the refusal while
        an ingester holds the ingest lock."""
        # One launch at a time from this viewer; the ingest lock settles races with terminals and other viewers.
        with self._launch_lock:
            if is_lock_held(self.settings.db):
                raise ApiError(409, ErrorKind.RUN_ACTIVE, busy)
            try:
                launched = self.launcher.launch(request)
            except LaunchError as exc:
                raise ApiError(500, ErrorKind.SPAWN_FAILED, str(exc), hint=exc.hint) from exc
            yield launched

    def _spawn_failed(self, launched: Launched, message: str, *, hint: str) -> ApiError:
        """A `spawn_failed` whose hint is the ingester's last log line (`hint` when it wrote none)."""
        tail = self.launcher.log_tail(launched, lines=1)
        return ApiError(500, ErrorKind.SPAWN_FAILED, message, hint=tail[-1] if tail else hint)

    def launch(
        self, *, source: str, path: str | None = None, resume_run_id: int | None = None, unattended: bool = False
    ) -> int | None:
        """Starts an ingester and returns its run id (None if it had not written its row within the wait).

        `unattended` is a scheduled refresh: the scan fails with auth_required rather than wait for consent."""
        if source not in (Source.MBOX, Source.GMAIL_API):
            raise ApiError(422, ErrorKind.BAD_SOURCE, "source must be `mbox` or `gmail_api`")
        if resume_run_id is not None:
            path = self._resumable(source, resume_run_id)
        import_path = None
        if source == Source.MBOX:
            if path is None:
                raise ApiError(422, ErrorKind.BAD_PATH, "an import needs `path`, a file listed by /api/imports")
            import_path = resolve_import(self.settings.import_dir, path)
        request = LaunchRequest(
            LaunchCommand.IMPORT if source == Source.MBOX else LaunchCommand.SCAN,
            import_path=import_path,
            resume_run_id=resume_run_id,
            account=self.account,
            unattended=unattended,
        )
        with self._launching(request, busy="an ingester is already running; wait for it or cancel it") as launched:
            with self._state_lock:
                self._owned[launched.launch_token] = launched
            return self._wait_for_row(launched)

    def change_settings(self, *, refresh: str | None, address: str | None) -> None:
        """Launches `gmail-stats account` to store this account's refresh interval or Gmail address, and waits
        for it to end: the viewer never writes them itself. Raises `ApiError` when the change did not happen."""
        request = LaunchRequest(LaunchCommand.ACCOUNT, account=self.account, refresh=refresh, address=address)
        with self._launching(request, busy="an ingester is running for this account; change it after") as launched:
            deadline = time.monotonic() + self.settings.run_row_wait_seconds
            while self.launcher.is_alive(launched) and time.monotonic() < deadline:
                time.sleep(_POLL_SECONDS)
            stored = self.database.read_ready(read_settings)
            refresh_stored = refresh is None or (stored is not None and str(stored.refresh) == refresh)
            address_stored = address is None or (stored is not None and stored.gmail_address == address.strip().lower())
            if not (refresh_stored and address_stored):
                hint = "run `gmail-stats account` in a terminal to see why"
                raise self._spawn_failed(launched, "the ingester did not store the change", hint=hint)

    def _resumable(self, source: str, run_id: int) -> str | None:
        """The import file of a run the page may resume (None for a scan); raises `ApiError` when it may not."""
        run = self._run(run_id)
        if run is None:
            raise ApiError(422, ErrorKind.BAD_RESUME, f"there is no run {run_id}")
        if run.source != source:
            raise ApiError(422, ErrorKind.BAD_RESUME, f"run {run_id} is a {run.source} run, not {source}")
        if run.is_open and is_lock_held(self.settings.db):
            raise ApiError(409, ErrorKind.RUN_ACTIVE, f"run {run_id} is still running")
        if run.state == RunState.DONE:  # the ingester refuses it too: there is nothing left to continue
            verb = "import" if source == Source.MBOX else "scan"
            raise ApiError(422, ErrorKind.BAD_RESUME, f"run {run_id} already finished; start a new {verb} instead")
        if source != Source.MBOX:
            return None
        relative = relative_to_import_dir(self.settings, run.mbox_path or "")
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
        return relative

    def _wait_for_row(self, launched: Launched) -> int | None:
        deadline = time.monotonic() + self.settings.run_row_wait_seconds
        while True:
            # Alive asked before the row is read: a runner that writes its row and ends in between is still found.
            alive = self.launcher.is_alive(launched)
            try:
                run = self.database.read_ready(lambda conn: run_by_launch_token(conn, launched.launch_token))
            except ApiError:
                run = None  # mid-migration or busy: look again
            if run is not None:
                return run.run_id
            if not alive:
                if is_lock_held(self.settings.db):
                    raise ApiError(
                        409, ErrorKind.RUN_ACTIVE, "another ingester started first; wait for it or cancel it"
                    )
                hint = "run the same command in a terminal to see why"
                raise self._spawn_failed(launched, "the ingester stopped before it started a run", hint=hint)
            if time.monotonic() >= deadline:
                return None
            time.sleep(_POLL_SECONDS)

    # -- owned runs ----------------------------------------------------------------------------------------------

    def _run(self, run_id: int) -> Run | None:
        return self.database.read_ready(lambda conn: get_run(conn, run_id))

    def cancel(self, run_id: int) -> None:
        launched = self.owns(self._run(run_id))
        if launched is None:
            raise ApiError(409, ErrorKind.NOT_OWNED, "this run was started elsewhere; cancel it where it was started")
        if not self.launcher.is_alive(launched):
            raise ApiError(409, ErrorKind.NOT_RUNNING, f"run {run_id} is not running any more")
        self.launcher.cancel(launched, grace_seconds=self.settings.cancel_grace_seconds)

    def log(self, run_id: int) -> list[str]:
        launched = self.owns(self._run(run_id))
        if launched is None:
            raise ApiError(404, ErrorKind.NOT_OWNED, "only the log of a run started from this viewer is available")
        return self.launcher.log_tail(launched)

    # -- consent pasted on the page ------------------------------------------------------------------------------

    def paste_consent(self, run_id: int, address: str) -> None:
        """Hands a pasted redirect address to the scan waiting for consent (see `viewer.launch.consent_paste`)."""
        run = self._run(run_id)
        awaited = awaited_consent(run.auth_url) if run is not None else None
        if run is None or run.state != RunState.AWAITING_AUTH or awaited is None or not is_lock_held(self.settings.db):
            raise ApiError(409, ErrorKind.NOT_RUNNING, f"run {run_id} is not waiting for consent")
        pasted = parse_pasted(address)
        if pasted.state != awaited.state:
            raise BadPaste(
                "that address is from another consent (its state differs); open the consent page again, allow "
                "access and paste the address the browser ends on"
            )
        try:
            host, port = self.launcher.consent_listener(self.owns(run), redirect_port=awaited.port)
        except LaunchError as exc:
            raise ApiError(409, ErrorKind.NOT_OWNED, str(exc), hint=exc.hint) from exc
        deliver(pasted, host=host, port=port, run_id=run_id)
