"""Consent given in a browser that cannot reach the scan: the address it ended on, pasted on the scan's terminal or
on the page, completes the consent; one from another consent is refused in one line and the scan keeps waiting."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from ingester.gmail.consent import PasteRefused, pasted_callback
from tests.conftest import REPO_ROOT, ingester_env
from tests.support.net import free_port
from tests.support.scan import GoogleSetup, fake_google, last_run, runs, sender_counts, wait_for
from tests.support.viewer import csrf_headers, make_settings, viewer
from viewer.launch.consent_paste import AwaitedConsent, BadPaste, PastedConsent, awaited_consent, parse_pasted
from viewer.launch.launch_process import ProcessLauncher, default_ingest_command

PROMPT = "paste its address here"
STATE = "abcDEF123"


def _redirect_address(auth_url: str) -> str:
    """Where fake Google sends the browser after consent, without following it (the browser is elsewhere)."""
    with httpx.Client(timeout=30) as browser:
        answer = browser.get(auth_url)
    assert answer.status_code == 302, answer.text
    return answer.headers["location"]


def _with_state(address: str, state: str) -> str:
    head, _, query = address.partition("?")
    kept = [part for part in query.split("&") if not part.startswith("state=")]
    return f"{head}?{'&'.join([f'state={state}', *kept])}"


def _without_code(address: str) -> str:
    head, _, query = address.partition("?")
    return f"{head}?{'&'.join(part for part in query.split('&') if not part.startswith('code='))}"


# ---- The pure checks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (f"http://127.0.0.1:8765/?state={STATE}&code=4/0Ab-x_y.z&scope=https://x", "4/0Ab-x_y.z"),
        (f"  http://127.0.0.1:8765/?code=4%2F0Ab&state={STATE}\n", "4/0Ab"),
        (f"/?state={STATE}&code=c", "c"),
    ],
)
def test_a_pasted_redirect_gives_its_code(text: str, code: str) -> None:
    assert pasted_callback(text, state=STATE).code == code
    assert parse_pasted(text) == PastedConsent(state=STATE, code=code)


@pytest.mark.parametrize(
    ("text", "ingester_words", "viewer_words"),
    [
        ("http://127.0.0.1:8765/?state=other&code=c", "state differs", None),
        (f"http://127.0.0.1:8765/?state={STATE}", "no code", "no consent code"),
        (f"http://127.0.0.1:8765/?state={STATE}&error=access_denied", "access_denied", "access_denied"),
        (f"http://127.0.0.1:8765/?state={STATE}&code=" + "c" * 5000, "longer than", "longer than"),
        (f"http://127.0.0.1:8765/?state={STATE}&code=a%0Ab", None, "not the address"),
        (f"http://127.0.0.1:8765/?state={STATE}&code=a&code=b", None, "not the address"),
        ("", "state differs", "paste the address"),
    ],
)
def test_a_pasted_address_that_is_no_consent_is_refused_saying_why(
    text: str, ingester_words: str | None, viewer_words: str | None
) -> None:
    if ingester_words is not None:
        with pytest.raises(PasteRefused, match=ingester_words):
            pasted_callback(text, state=STATE)
    if viewer_words is not None:
        with pytest.raises(BadPaste, match=viewer_words):
            parse_pasted(text)


@pytest.mark.parametrize(
    ("auth_url", "expected"),
    [
        (
            "https://accounts.google.com/o/oauth2/auth?state=s1&redirect_uri=http%3A%2F%2F127.0.0.1%3A8765%2F",
            AwaitedConsent(state="s1", port=8765),
        ),
        ("https://accounts.google.com/o/oauth2/auth?state=s1&redirect_uri=http%3A%2F%2Fevil.example%3A80%2F", None),
        ("https://accounts.google.com/o/oauth2/auth?redirect_uri=http%3A%2F%2F127.0.0.1%3A8765%2F", None),
        ("https://accounts.google.com/o/oauth2/auth?state=s1&redirect_uri=http%3A%2F%2F127.0.0.1%3Ax%2F", None),
        (None, None),
    ],
)
def test_the_viewer_reads_the_awaited_state_and_port_from_the_consent_link(
    auth_url: str | None, expected: AwaitedConsent | None
) -> None:
    assert awaited_consent(auth_url) == expected


# ---- The CLI: a real scan process reading its stdin ---------------------------------------------------------


@dataclass
class _Scan:
    process: subprocess.Popen[str]
    paste: Any  # writes one line to the scan's stdin
    stderr_lines: list[str] = field(default_factory=list)

    def stderr_has(self, words: str) -> bool:
        return any(words in line for line in list(self.stderr_lines))


def _collect(stream: IO[str], into: list[str]) -> None:
    for line in stream:
        into.append(line)


@contextmanager
def _scan_with_stdin(g: GoogleSetup, *args: str, tty: bool) -> Iterator[_Scan]:
    """`gmail-stats scan ARGS` with its stdin a terminal (a pty) or a pipe, its stderr read as it comes."""
    g.tokens.unlink(missing_ok=True)
    env = ingester_env(**g.env(GMAIL_STATS_OAUTH_PORT=str(free_port())))
    argv = [sys.executable, "-m", "ingester", "scan", *args]
    if tty:
        master, slave = os.openpty()
        process = subprocess.Popen(
            argv, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT
        )
        os.close(slave)

        def paste(line: str) -> None:
            os.write(master, line.encode() + b"\n")
    else:
        master = -1
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO_ROOT,
        )

        def paste(line: str) -> None:
            assert process.stdin is not None
            process.stdin.write(line + "\n")
            process.stdin.flush()

    scan = _Scan(process, paste)
    assert process.stderr is not None
    reader = threading.Thread(target=_collect, args=(process.stderr, scan.stderr_lines), daemon=True)
    reader.start()
    try:
        yield scan
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)
        reader.join(timeout=30)
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        if master != -1:
            os.close(master)


def _stdout_at_exit(scan: _Scan) -> str:
    """Its stdout once it has exited; stderr stays the reader thread's (`communicate` would read and close it)."""
    assert scan.process.stdout is not None
    stdout = scan.process.stdout.read()
    scan.process.wait(timeout=120)
    return stdout


def _awaiting(g: GoogleSetup) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        run = last_run(g.db)
        return run if run and run["state"] == "awaiting_auth" and run["auth_url"] else None

    return wait_for(check, timeout=60, what="the consent URL on the run row")


def test_a_terminal_scan_takes_the_pasted_address_after_refusing_another_consents(tmp_path: Path) -> None:
    with fake_google(tmp_path, 120, tokens=False) as g, _scan_with_stdin(g, tty=True) as scan:
        address = _redirect_address(str(_awaiting(g)["auth_url"]))
        scan.paste(_with_state(address, "forged"))
        wait_for(lambda: scan.stderr_has("state differs"), timeout=30, what="the refusal line")
        assert scan.process.poll() is None and _awaiting(g)["state"] == "awaiting_auth"
        scan.paste(address)
        stdout = _stdout_at_exit(scan)
        assert scan.process.returncode == 0, "".join(scan.stderr_lines)
        assert PROMPT in stdout
        refusals = [line for line in scan.stderr_lines if "consent" in line and "gmail-stats:" in line]
        assert refusals == [
            "gmail-stats: that address is not from this consent (its state differs); paste the address the "
            "browser showed after the link printed above\n"
        ]
        assert runs(g.db)[-1]["state"] == "done" and sender_counts(g.db) == g.google.mailbox.expected_counts()
        assert g.tokens.exists()


@pytest.mark.parametrize("asked", [True, False])
def test_a_piped_stdin_is_read_only_when_asked(tmp_path: Path, asked: bool) -> None:
    args = ("--paste-redirect",) if asked else ()
    with fake_google(tmp_path, 40, tokens=False) as g, _scan_with_stdin(g, *args, tty=False) as scan:
        auth_url = str(_awaiting(g)["auth_url"])
        if asked:
            scan.paste(_without_code(_redirect_address(auth_url)))
            wait_for(lambda: scan.stderr_has("no code"), timeout=30, what="the refusal line")
            scan.paste(_redirect_address(auth_url))
        else:  # unattended runs are unchanged: only the redirect answers
            with httpx.Client(timeout=30) as browser:
                assert browser.get(auth_url, follow_redirects=True).status_code == 200
        stdout = _stdout_at_exit(scan)
        assert scan.process.returncode == 0, "".join(scan.stderr_lines)
        assert (PROMPT in stdout) is asked
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()


# ---- The page's API: a real viewer launching a real scan ----------------------------------------------------


def _status_run(client: Any) -> dict[str, Any] | None:
    run = client.get("/api/status").json()["active_run"]
    return run if run and run["state"] == "awaiting_auth" and run["auth_url"] else None


@pytest.mark.slow
def test_consent_pasted_on_the_page_reaches_the_scan_it_launched(tmp_path: Path) -> None:
    with fake_google(tmp_path, 150, tokens=False) as g:
        settings = make_settings(tmp_path, db=g.db)
        env = ingester_env(**g.env(GMAIL_STATS_OAUTH_PORT=str(free_port())))
        launcher = ProcessLauncher(
            ingest_command=default_ingest_command(), db_path=g.db, import_dir=settings.import_dir, environ=env
        )
        g.tokens.unlink(missing_ok=True)
        with viewer(settings, launcher=launcher) as client:
            headers = csrf_headers(client)
            started = client.post("/api/runs", json={"source": "gmail_api"}, headers=headers)
            assert started.status_code == 202, started.text
            run = wait_for(lambda: _status_run(client), timeout=60, what="the scan awaiting consent")
            run_id = run["run_id"]
            address = _redirect_address(run["auth_url"])
            url = f"/api/runs/{run_id}/consent"

            no_token = client.post(url, json={"address": address}, headers={"Content-Type": "application/json"})
            assert no_token.status_code == 403 and no_token.json()["error"] == "csrf"
            forged = client.post(url, json={"address": _with_state(address, "forged")}, headers=headers)
            assert (forged.status_code, forged.json()) == (
                422,
                {
                    "error": "bad_request",
                    "message": "that address is from another consent (its state differs); open the consent page "
                    "again, allow access and paste the address the browser ends on",
                },
            )
            no_code = client.post(url, json={"address": _without_code(address)}, headers=headers)
            assert no_code.status_code == 422 and "no consent code" in no_code.json()["message"]
            assert _status_run(client) is not None  # still waiting, nothing delivered
            wrong_run = client.post(f"/api/runs/{run_id + 1}/consent", json={"address": address}, headers=headers)
            assert wrong_run.status_code == 409 and wrong_run.json()["error"] == "not_running"

            accepted = client.post(url, json={"address": address}, headers=headers)
            assert (accepted.status_code, accepted.json()) == (202, {"run_id": run_id})

            def finished() -> dict[str, Any] | None:
                last = client.get("/api/status").json()["last_run"]
                return last if last and last["run_id"] == run_id and last["state"] == "done" else None

            done = wait_for(finished, timeout=120, what="the scan to finish")
            assert done["outcome"] == "complete" and done["auth_url"] is None
            assert sender_counts(g.db) == g.google.mailbox.expected_counts()
            late = client.post(url, json={"address": address}, headers=headers)
            assert (late.status_code, late.json()["error"]) == (409, "not_running")
