"""The `process` launcher: each ingester is a child process with a fixed argv, never a shell.

Children run in their own session, so a viewer stopped with Ctrl-C leaves a running import alone; their output
goes to a log file per launch (a pipe would break the child once the viewer is gone).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from shared.launch_request import LaunchRequest
from viewer.launch.launcher import LOG_TAIL_LINES, Launched, LaunchError

_LOG_TAIL_BYTES = 64 * 1024
# A launched ingester inherits its own settings (GMAIL_STATS_*) and what any process needs for programs, locale,
# temporary files, proxies and CA bundles; nothing else of the viewer's environment (other tools' secrets stay put).
_INHERITED = frozenset(
    {
        *("PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE"),
        *("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"),
        "OAUTHLIB_INSECURE_TRANSPORT",
    }
)


def default_ingest_command() -> list[str]:
    """The `gmail-stats` beside this interpreter (same virtualenv), else the one on PATH."""
    beside = Path(sys.executable).parent / "gmail-stats"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("gmail-stats")
    return [found] if found else [str(beside)]


def build_argv(ingest_command: Sequence[str], request: LaunchRequest, *, import_dir: Path) -> list[str]:
    """The complete argv for a request (`LaunchRequest.argv`), under the real import folder."""
    return [*ingest_command, *request.argv(import_dir=import_dir.resolve()), "--quiet"]


class ProcessLauncher:
    """Implements `viewer.launch.launcher.Launcher` with child processes."""

    def __init__(
        self,
        *,
        ingest_command: Sequence[str],
        db_path: Path,
        import_dir: Path,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.ingest_command = list(ingest_command)
        self.import_dir = import_dir
        inherited = os.environ if environ is None else environ
        self.environ = {
            **{k: v for k, v in inherited.items() if k in _INHERITED or k.startswith(("GMAIL_STATS_", "LC_"))},
            "GMAIL_STATS_DB": str(db_path.absolute()),
            # The account is the request's `--account` alone, never one the viewer's own environment names.
            "GMAIL_STATS_ACCOUNT": "",
            "PYTHONUNBUFFERED": "1",
        }
        self._children: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()
        self._log_dir = Path(tempfile.mkdtemp(prefix="gmail-stats-viewer-"))

    def launch(self, request: LaunchRequest) -> Launched:
        argv = build_argv(self.ingest_command, request, import_dir=self.import_dir)
        env = {**self.environ, "GMAIL_STATS_LAUNCH_TOKEN": request.launch_token}
        try:
            with self._log_path(request.launch_token).open("wb") as log:
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    close_fds=True,
                    start_new_session=True,
                )
        except OSError as exc:
            raise LaunchError(
                f"could not start the ingester: {exc.strerror}",
                hint="check GMAIL_STATS_INGEST_BIN points at the gmail-stats executable",
            ) from exc
        launched = Launched(handle=str(process.pid), launch_token=request.launch_token)
        with self._lock:
            self._children[launched.handle] = process
        return launched

    def _log_path(self, launch_token: str) -> Path:
        return self._log_dir / f"{launch_token[:16]}.log"

    def _child(self, launched: Launched) -> subprocess.Popen[bytes] | None:
        with self._lock:
            return self._children.get(launched.handle)

    def is_alive(self, launched: Launched) -> bool:
        child = self._child(launched)
        return child is not None and child.poll() is None

    def cancel(self, launched: Launched, *, grace_seconds: float) -> None:
        child = self._child(launched)
        if child is None or child.poll() is not None:
            return
        child.send_signal(signal.SIGTERM)

        def escalate() -> None:
            try:
                child.wait(timeout=grace_seconds)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

        threading.Thread(target=escalate, name=f"cancel-{launched.handle}", daemon=True).start()

    def log_tail(self, launched: Launched, *, lines: int = LOG_TAIL_LINES) -> list[str]:
        # Only this launcher's launches have a log in its private folder (removed by `close`).
        try:
            with self._log_path(launched.launch_token).open("rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - _LOG_TAIL_BYTES))
                data = handle.read()
        except OSError:
            return []
        text = data.decode("utf-8", "replace").replace("\r", "\n")
        return [line for line in text.split("\n") if line.strip()][-lines:]

    def adopt(self) -> list[Launched]:
        # A child process cannot be re-parented to a new viewer; its run still shows, as started elsewhere.
        return []

    def consent_listener(self, launched: Launched | None, *, redirect_port: int) -> tuple[str, int]:
        # Any scan on this machine (started here or in a terminal) listens on its redirect's loopback port.
        return "127.0.0.1", redirect_port

    def reap(self) -> None:
        """Collects exit statuses (no zombies); logs stay readable until the viewer stops."""
        with self._lock:
            children = list(self._children.values())
        for child in children:
            child.poll()

    def close(self) -> None:
        """Leaves running children alone (a watcher reaps each when it ends) and removes the log folder."""
        with self._lock:
            children, self._children = list(self._children.values()), {}
        for child in children:
            if child.poll() is None:
                threading.Thread(target=child.wait, name="reap-ingester", daemon=True).start()
        shutil.rmtree(self._log_dir, ignore_errors=True)
