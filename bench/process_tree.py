"""Runs one command as a child process and measures it: wall time, and peak RSS of the process and its tree.

Reads `/proc` only (no new dependency); knows nothing about what it runs.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SAMPLE_SECONDS = 0.02
EXEC_POLL_SECONDS = 0.001
RESCAN_EVERY = 5  # samples between two walks of the process table (new workers appear only at start)


@dataclass(frozen=True, slots=True)
class Measurement:
    seconds: float
    peak_main_kb: int
    peak_tree_kb: int
    exit_code: int
    stdout: str
    stderr: str


def _status_kb(pid: int) -> dict[str, int]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # the process has gone
        return {}
    fields = (line.split() for line in text.splitlines() if line.startswith(("VmRSS:", "VmHWM:")))
    return {parts[0].rstrip(":"): int(parts[1]) for parts in fields}


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_bytes()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(b")", 1)[1].split()[1])  # field 4, after `(comm)`
    return parents


def descendants(pid: int) -> list[int]:
    """Every process below `pid`: `/proc/<pid>/task/*/children` when the kernel has it, else the PPid table."""
    if Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        found, stack = [], [pid]
        while stack:
            for children in Path(f"/proc/{stack.pop()}/task").glob("*/children"):
                kids = [int(kid) for kid in children.read_text().split()]
                found += kids
                stack += kids
        return found
    parents = _parents()
    tree = {pid}
    for _ in range(8):  # the importer's tree is two levels deep; eight passes is plenty
        tree |= {child for child, parent in parents.items() if parent in tree}
    return sorted(tree - {pid})


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


class TreeSampler(threading.Thread):
    """Samples the RSS of a process and of its whole tree every `SAMPLE_SECONDS` until stopped.

    A forked child shows its parent's memory until it execs (and Linux carries `ru_maxrss` across exec, so that
    is no use either): a process counts only once its command line differs from the one of the process that
    spawned it.
    """

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.stopped = pid, threading.Event()
        self.peak_main_kb = self.peak_tree_kb = 0

    def _exec_seen(self) -> bytes:
        spawner = _cmdline(os.getpid())
        while not self.stopped.wait(EXEC_POLL_SECONDS):
            command = _cmdline(self.pid)
            if command and command != spawner:
                return command
        return b""

    def run(self) -> None:
        command = self._exec_seen()
        children: list[int] = []
        for sample in itertools.count():
            if sample % RESCAN_EVERY == 0:
                children = [child for child in descendants(self.pid) if _cmdline(child) not in (command, b"")]
            main = _status_kb(self.pid)
            self.peak_main_kb = max(self.peak_main_kb, main.get("VmHWM", 0))
            tree = main.get("VmRSS", 0) + sum(_status_kb(child).get("VmRSS", 0) for child in children)
            self.peak_tree_kb = max(self.peak_tree_kb, tree)
            if self.stopped.is_set() or self.stopped.wait(SAMPLE_SECONDS):
                return


def measure(command: list[str], *, env: dict[str, str], cwd: Path, workdir: Path) -> Measurement:
    """Runs `command` to completion, its output in files under `workdir`; wall time is from spawn to reap."""
    with (workdir / "stdout").open("w+") as out, (workdir / "stderr").open("w+") as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        sampler = TreeSampler(process.pid)
        sampler.start()
        exit_code = process.wait()  # blocks this thread only, so the timing is exact
        seconds = time.perf_counter() - start
        sampler.stopped.set()
        sampler.join()
        out.seek(0)
        err.seek(0)
        main_kb = sampler.peak_main_kb
        return Measurement(seconds, main_kb, max(sampler.peak_tree_kb, main_kb), exit_code, out.read(), err.read())
