"""What a process-launched ingester inherits from the viewer: its own settings and process basics, nothing else."""

from __future__ import annotations

import time
from pathlib import Path

from shared.launch_request import LaunchCommand, LaunchRequest
from viewer.launch.launch_process import ProcessLauncher


def test_a_launched_ingester_gets_its_settings_and_the_basics_but_not_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "environment"
    recorder = tmp_path / "record-env"
    recorder.write_text(f'#!/bin/sh\nenv > "{out}.part" && mv "{out}.part" "{out}"\n')
    recorder.chmod(0o755)
    viewer_environment = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "GMAIL_STATS_SCAN_WORKERS": "2",
        "GMAIL_STATS_DB": "/somewhere/else.db",
        "AWS_SECRET_ACCESS_KEY": "not-for-the-ingester",
        "PYTHONSTARTUP": "/tmp/evil.py",
    }
    launcher = ProcessLauncher(
        ingest_command=[str(recorder)], db_path=tmp_path / "stats.db", import_dir=tmp_path, environ=viewer_environment
    )
    launched = launcher.launch(LaunchRequest(command=LaunchCommand.SCAN, launch_token="t" * 32))
    deadline = time.monotonic() + 30
    while launcher.is_alive(launched) and time.monotonic() < deadline:
        time.sleep(0.05)
    received = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert received["GMAIL_STATS_SCAN_WORKERS"] == "2"
    assert received["GMAIL_STATS_DB"] == str((tmp_path / "stats.db").absolute())
    assert received["GMAIL_STATS_LAUNCH_TOKEN"] == "t" * 32
    assert received["LANG"] == received["LC_ALL"] == "C.UTF-8"
    assert "AWS_SECRET_ACCESS_KEY" not in received
    assert "PYTHONSTARTUP" not in received
