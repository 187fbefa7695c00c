"""A person at a shell on the Docker host: an unprivileged user (created when the tests run as root, as in CI), a
fresh copy of the repository that user owns, and commands run as that user, on a pseudo-terminal when the test
needs Ctrl-C to be a keystroke as it is at a prompt.

Only the Docker quick-start test uses it; it never needs sudo for anything the user does.
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import termios
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO_ROOT

USER_NAME = "gmstest-quickstart"


@dataclass(frozen=True, slots=True)
class HostUser:
    uid: int
    gid: int
    home: Path

    def argv(self, *command: str) -> list[str]:
        """`command` as this user (through setpriv when the test runs as root), with only its own groups."""
        if self.uid == os.geteuid():
            return list(command)
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups", "--", *command]

    def env(self, **extra: str) -> dict[str, str]:
        """A login-like environment: nothing of the test's own (no GMAIL_STATS_*, COMPOSE_*, CI)."""
        env = {
            "HOME": str(self.home),
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "USER": pwd.getpwuid(self.uid).pw_name,
            "LOGNAME": pwd.getpwuid(self.uid).pw_name,
        }
        if "DOCKER_HOST" in os.environ:
            env["DOCKER_HOST"] = os.environ["DOCKER_HOST"]
        return env | extra

    def own(self, path: Path) -> None:
        """Gives `path` (a file, or a folder and everything in it) to this user, as if the user had made it."""
        if self.uid == os.geteuid():
            return
        os.lchown(path, self.uid, self.gid)
        for root, dirs, files in os.walk(path):
            for name in [root, *(os.path.join(root, d) for d in dirs), *(os.path.join(root, f) for f in files)]:
                os.lchown(name, self.uid, self.gid)


def _engine_group() -> int:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return os.stat(host.removeprefix("unix://")).st_gid


@contextlib.contextmanager
def host_user() -> Iterator[HostUser]:
    """The test's own user when it is not root; else a user in the engine socket's group, removed afterwards."""
    home = Path(tempfile.mkdtemp(prefix="gmstest-home-", dir="/tmp"))
    created = False
    try:
        if os.geteuid() != 0:
            yield HostUser(uid=os.getuid(), gid=os.getgid(), home=home)
            return
        try:
            entry = pwd.getpwnam(USER_NAME)
        except KeyError:
            group = grp.getgrgid(_engine_group()).gr_name
            subprocess.run(
                ["useradd", "--no-create-home", "--user-group", "--groups", group, "--shell", "/bin/sh", USER_NAME],
                check=True,
                capture_output=True,
            )
            created = True
            entry = pwd.getpwnam(USER_NAME)
        user = HostUser(uid=entry.pw_uid, gid=entry.pw_gid, home=home)
        home.chmod(0o755)
        user.own(home)
        yield user
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if created:
            subprocess.run(["userdel", USER_NAME], check=False, capture_output=True)


def fresh_copy(user: HostUser, *, into: Path) -> Path:
    """The working tree's tracked and new (not ignored) files, as a clone would have them, owned by `user`."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    )
    for name in listing.stdout.decode().split("\0"):
        source = REPO_ROOT / name
        if name and source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    into.chmod(0o755)
    user.own(into)
    return into


class Session:
    """A command running as the host user, its output collected as it comes.

    With `tty=True` it runs on a pseudo-terminal it controls, so `ctrl_c()` types ^C as a person does (the terminal,
    or the program that put it in raw mode, decides what that means); without one `ctrl_c()` sends SIGINT to its
    process group, as a script or a supervisor does.
    """

    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str], tty: bool) -> None:
        self._chunks: list[bytes] = []
        self._lock = threading.Lock()
        self.tty = tty
        if tty:
            self._master, slave = os.openpty()
            self.process = subprocess.Popen(
                argv,
                cwd=cwd,
                env={**env, "TERM": "xterm"},
                stdin=slave,
                stdout=slave,
                stderr=slave,
                start_new_session=True,
                preexec_fn=_take_terminal,
            )
            os.close(slave)
            read_fd = self._master
        else:
            self.process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_default_signals,
            )
            assert self.process.stdout is not None
            read_fd = self.process.stdout.fileno()
        self._reader = threading.Thread(target=self._pump, args=(read_fd,), daemon=True)
        self._reader.start()

    def _pump(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the terminal's last writer has gone
                return
            if not chunk:
                return
            with self._lock:
                self._chunks.append(chunk)

    def output(self) -> str:
        with self._lock:
            text = b"".join(self._chunks).decode(errors="replace")
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", text)  # terminal colours and cursor moves, CR of CRLF

    def expect(self, pattern: str, *, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(pattern, self.output())
            if found:
                return found
            if time.monotonic() > deadline or (self.process.poll() is not None and not self._reader.is_alive()):
                raise AssertionError(f"no {pattern!r} in the output:\n{self.output()[-3000:]}")
            time.sleep(0.1)

    def ctrl_c(self) -> None:
        if self.tty:
            os.write(self._master, b"\x03")
        else:
            os.killpg(self.process.pid, signal.SIGINT)

    def wait(self, timeout: float) -> int:
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            raise AssertionError(f"still running after {timeout} s:\n{self.output()[-3000:]}") from None
        self._close_output()
        return code

    def close(self) -> None:
        """Ends the command if it still runs (its whole process group) and closes its output; idempotent."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)
        self._close_output()

    def _close_output(self) -> None:
        self._reader.join(10)
        if self.tty:
            if self._master >= 0:
                os.close(self._master)
                self._master = -1
        elif self.process.stdout is not None:
            self.process.stdout.close()


def _default_signals() -> None:
    """Runs in the child: SIGINT and SIGQUIT as a login shell has them. A test run started in the background of a
    non-interactive shell (`cmd &`, as CI runners and nohup do) inherits both ignored, and a shell script cannot
    trap a signal ignored on entry: `make scan`'s Ctrl-C handler would never run and the test would wait for it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _take_terminal() -> None:
    """Runs in the child after setsid: the pseudo-terminal becomes its controlling terminal, as a login's is."""
    _default_signals()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
