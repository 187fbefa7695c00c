"""The `docker` launcher: each run goes to a free runner of its kind's pool (`launch_docker` is its engine adapter).

The privileged entrypoint creates the runners (`viewer.launch.provision`); the web process then only writes a request
file and starts, kills, inspects or reads the logs of a runner by name, through the API filter. Two accounts' runs of
one kind take two runners; the request names the account.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import suppress
from pathlib import Path

from shared.launch_request import LaunchRequest
from viewer.launch.container_spec import OAUTH_CONTAINER_PORT, Runners, request_document, request_token, started_unix
from viewer.launch.launch_docker import API_ERRORS, RUNNERS_FILE, DockerClient, connect, engine_hint, runner_state
from viewer.launch.launcher import LOG_TAIL_LINES, Launched, LaunchError

# Every runner of a kind busy: one whose ingester has released its lock may be only exiting (interpreter shutdown),
# so a launch waits this long for one to stop. It waits as long for the consent port (see `_PortHeld`).
_EXIT_WAIT_SECONDS = 10.0


class _PortHeld(LaunchError):
    """The engine would not publish the first scan runner's callback port. Its record of a port outlives the
    container that published it for a moment (another runner, a `make scan` that just ended), so asking again
    soon succeeds; a `make scan` still running holds it for good, which the hint names."""


class DockerLauncher:
    """Implements `viewer.launch.launcher.Launcher` on the runners; a `Launched.handle` is `NAME@STARTED_AT`."""

    @classmethod
    def from_runners_file(cls) -> DockerLauncher:
        try:
            runners = Runners.from_json(RUNNERS_FILE.read_text())
        except (OSError, ValueError, KeyError) as exc:
            raise LaunchError(
                f"no runner containers were created ({exc})",
                hint="start the viewer with compose.yaml, which mounts the Docker socket for its entrypoint",
            ) from exc
        return cls(connect(), runners)

    def __init__(self, client: DockerClient, runners: Runners, *, wait_seconds: float = _EXIT_WAIT_SECONDS):
        self._client = client
        self._runners = runners
        self._wait_seconds = wait_seconds
        self._lock = threading.Lock()
        self._finished_logs: dict[str, list[str]] = {}
        self._timers: list[threading.Timer] = []

    def close(self) -> None:
        """Stops pending SIGKILL timers, removes the stopped runners and closes the client.

        A runner that is not running is removed (the engine refuses a running one: it goes on, and the next viewer
        adopts it), so once the viewer stops nothing outside compose holds the stack's volumes and
        `docker compose down --volumes` deletes the database; the next viewer's entrypoint creates them again."""
        with self._lock:
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()
            timer.join()
        for _, _, name in self._runners.slots():
            with suppress(*API_ERRORS):
                # Exactly the query the API filter allows: never `force`, never the volumes.
                self._client.api.remove_container(name, v=False, link=False, force=False)
        self._client.close()

    def consent_listener(self, launched: Launched | None, *, redirect_port: int) -> tuple[str, int]:
        """The scan's runner by its container name on the stack network (it listens on 0.0.0.0 there); a scan from
        `make scan` runs in a container of its own, out of the viewer's reach."""
        name = launched.handle.partition("@")[0] if launched is not None else None
        if name is None or name not in self._runners.scans:
            raise LaunchError(
                "this scan was started in a terminal, not from this page",
                hint="paste the address in that terminal, where the scan waits for it",
            )
        return name, OAUTH_CONTAINER_PORT

    def launch(self, request: LaunchRequest) -> Launched:
        names = self._runners.names_for(request.command)
        # An attended scan takes the first free runner (the one publishing the consent port), a refresh the last.
        order = names[::-1] if request.unattended else names
        deadline = time.monotonic() + self._wait_seconds
        while True:
            try:
                started = self._start_free(order, request)
            except _PortHeld:
                if time.monotonic() > deadline:
                    raise
            else:
                if started is not None:
                    return started
                if time.monotonic() > deadline:
                    raise LaunchError(
                        f"all {len(names)} {request.command} runners are busy with other accounts' runs",
                        hint="wait for one of them to end",
                    )
            time.sleep(0.1)

    def _start_free(self, names: tuple[str, ...], request: LaunchRequest) -> Launched | None:
        """Starts the first of `names` that is not running, None when all are. Chosen and started under the lock,
        which `_signal` holds too: a kill aimed at an earlier run of a runner can never land on the one started
        here, and two accounts launching at once never pick the same runner."""
        with self._lock:
            name = None
            try:
                states = {candidate: runner_state(self._client, candidate) for candidate in names}
                if all(state is None for state in states.values()):
                    raise LaunchError(f"the runner {names[0]} is gone", hint="restart the viewer to create it again")
                free = [candidate for candidate, state in states.items() if state is not None and not state["Running"]]
                if not free:
                    return None
                name = free[0]
                _write_atomically(self._runners.request_path(name), request_document(request, now=time.time()))
                self._client.api.start(name)
                started = runner_state(self._client, name)
            except API_ERRORS as exc:
                if name is None:
                    raise LaunchError(f"cannot inspect the runners: {exc}", hint=engine_hint(exc)) from exc
                self._runners.request_path(name).unlink(missing_ok=True)
                error = _PortHeld if "port is already allocated" in str(exc) else LaunchError
                raise error(f"cannot start the runner {name}: {exc}", hint=engine_hint(exc)) from exc
            except OSError as exc:
                raise LaunchError(f"cannot write the run request: {exc}", hint="check the requests volume") from exc
        started_at = str((started or {}).get("StartedAt", ""))
        return Launched(handle=f"{name}@{started_at}", launch_token=request.launch_token)

    def is_alive(self, launched: Launched) -> bool:
        name, _, started_at = launched.handle.partition("@")
        try:
            state = runner_state(self._client, name)
        except API_ERRORS:
            return False
        return state is not None and bool(state["Running"]) and state["StartedAt"] == started_at

    def cancel(self, launched: Launched, *, grace_seconds: float) -> None:
        # `_signal` checks the run is still this one each time: an ended one is never signalled.
        self._signal(launched, "SIGTERM")
        timer = threading.Timer(grace_seconds, self._signal, args=(launched, "SIGKILL"))
        timer.daemon = True
        with self._lock:
            self._timers = [t for t in self._timers if t.is_alive()] + [timer]
        timer.start()

    def _signal(self, launched: Launched, signal: str) -> None:
        """Signals the runner only while it still runs this launch: checked and sent under the lock that `launch`
        starts a run under, so a later run of the same container is never hit."""
        with self._lock, suppress(*API_ERRORS):
            if self.is_alive(launched):
                self._client.api.kill(launched.handle.partition("@")[0], signal=signal)

    def log_tail(self, launched: Launched, *, lines: int = LOG_TAIL_LINES) -> list[str]:
        name, _, started_at = launched.handle.partition("@")
        with self._lock:
            kept = self._finished_logs.get(launched.handle)
        if kept is not None:
            return kept[-lines:]
        try:
            state = runner_state(self._client, name)
            if state is None or state["StartedAt"] != started_at:
                return []
            return self._logs(name, started_at, lines)
        except API_ERRORS:
            return []

    def _logs(self, name: str, started_at: str, lines: int) -> list[str]:
        # Only this run's lines (a runner's log spans its runs), from 1 s before StartedAt: a first line may precede it.
        raw = self._client.api.logs(name, stdout=True, stderr=True, tail=lines, since=started_unix(started_at) - 1.0)
        return bytes(raw).decode("utf-8", errors="replace").splitlines()[-lines:]

    def adopt(self) -> list[Launched]:
        """The runners still running from before this viewer started, with the tokens of the requests that started
        them."""
        adopted = []
        for _, _, name in self._runners.slots():
            with suppress(*API_ERRORS, OSError):  # the engine, or the request file, unreadable: not adopted
                state = runner_state(self._client, name)
                if state is None or not state["Running"]:
                    continue
                token = request_token(self._runners.request_path(name).read_bytes())
                if token is not None:
                    adopted.append(Launched(handle=f"{name}@{state['StartedAt']}", launch_token=token))
        return adopted

    def reap(self) -> None:
        """For each stopped runner: keeps its last run's log lines for `log_tail` and deletes its spent request (a
        runner started by anyone else then finds none and refuses to run)."""
        for _, _, name in self._runners.slots():
            with self._lock, suppress(*API_ERRORS):
                state = runner_state(self._client, name)
                if state is None or state["Running"]:
                    continue
                handle = f"{name}@{state['StartedAt']}"
                if handle not in self._finished_logs and state["StartedAt"] != "0001-01-01T00:00:00Z":
                    self._finished_logs[handle] = self._logs(name, state["StartedAt"], LOG_TAIL_LINES)
                self._runners.request_path(name).unlink(missing_ok=True)


def _write_atomically(path: Path, data: bytes) -> None:
    """Replaces the request file whole (readable by the runner, uid 10001 too), so a runner never reads half."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)
