"""Helpers for the scan tests: a fake Google on a socket, its client files, and the real CLI pointed at it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import REPO_ROOT, ingester_env, run_cli
from tests.fakes.google import FakeGoogle
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.mailbox import SINGLES, ConversationMix, FakeMessage, Mailbox
from tests.fakes.takeout import write_takeout
from tests.support.importing import counts_of
from tests.support.net import free_port
from tests.support.polling import wait_for as wait_for  # the one polling helper, importable from here too

# The one count reader (tests/support/importing.py), under the name the scan tests use.
sender_counts = counts_of


@dataclass(frozen=True, slots=True)
class GoogleSetup:
    google: FakeGoogle
    server: FakeGoogleServer
    credentials: Path
    tokens: Path
    db: Path

    def env(self, **extra: str) -> dict[str, str]:
        values = {
            "GMAIL_STATS_API_ENDPOINT": self.server.base_url,
            "GMAIL_STATS_CREDENTIALS": str(self.credentials),
            "GMAIL_STATS_TOKENS": str(self.tokens),
            "GMAIL_STATS_DB": str(self.db),
            # The fake's token endpoint is plain http on loopback; oauthlib refuses that unless told.
            "OAUTHLIB_INSECURE_TRANSPORT": "1",
            # Tests pace by the fake's quota when they want to; by default neither side limits, retries are quick.
            "GMAIL_STATS_QUOTA_UNITS_PER_SEC": "1000000",
            "GMAIL_STATS_RETRY_BASE_SECONDS": "0.02",
            # Never the default 8765: a Docker stack test on the other worker publishes its scan runner there.
            "GMAIL_STATS_OAUTH_PORT": str(free_port()),
        }
        values.update(extra)
        return values

    def scan(self, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
        return run_cli("scan", *args, timeout=timeout, **self.env(**env))

    def popen(self, *args: str, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "ingester", "scan", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=ingester_env(**self.env(**env)),
            cwd=REPO_ROOT,
        )

    def write_token_cache(self) -> None:
        self.tokens.write_text(json.dumps(self.google.authorized_user_info()))

    def add_account(self, name: str, messages: int, *, seed: int, address: str) -> Mailbox:
        """A second mailbox behind the same fake, reached by account `name`'s own token cache
        (`tokencache.NAME.json` beside the first), as a person's second Gmail account is."""
        box = Mailbox.generate(messages, seed=seed, senders=60)
        self.google.add_mailbox(name, box, address=address)
        tokens = self.tokens.with_name(f"{self.tokens.stem}.{name}{self.tokens.suffix}")
        tokens.write_text(json.dumps(self.google.authorized_user_info(name)))
        return box


@contextmanager
def fake_google(
    tmp_path: Path,
    messages: int,
    *,
    quota: float | None = None,
    seed: int = 7,
    tokens: bool = True,
    mix: ConversationMix = SINGLES,
) -> Iterator[GoogleSetup]:
    google = FakeGoogle(Mailbox.generate(messages, seed=seed, mix=mix), quota_units_per_sec=quota)
    with FakeGoogleServer(google) as server:
        setup = GoogleSetup(
            google, server, tmp_path / "credentials.json", tmp_path / "tokencache.json", tmp_path / "stats.db"
        )
        setup.credentials.write_text(json.dumps(google.client_config()))
        if tokens:
            setup.write_token_cache()
        yield setup


def runs(db: Path) -> list[dict[str, Any]]:  # column -> value, as sqlite3 returns it
    conn = sqlite3.connect(db)
    try:
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute("SELECT * FROM ingest_runs ORDER BY run_id")]
    finally:
        conn.close()


def last_run(db: Path) -> dict[str, Any] | None:
    if not db.exists():
        return None
    try:
        found = runs(db)
    except sqlite3.OperationalError:
        return None
    return found[-1] if found else None


def file_mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777


def rust_database(path: Path, *, version: int, ids: list[object], senders: list[tuple[str, int]], runs: bool) -> None:
    """The Rust tool's schema, as it created it (ids possibly stored as numbers by an INTEGER-affinity column)."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE seen_mails (mail_id INTEGER UNIQUE)"
        if version == 0
        else "CREATE TABLE seen_mails (mail_id TEXT PRIMARY KEY)"
    )
    conn.execute("CREATE TABLE senders (sender TEXT PRIMARY KEY, mails_sent INTEGER NOT NULL)")
    if runs:
        conn.execute("CREATE TABLE ingest_runs (id INTEGER PRIMARY KEY, started TEXT, finished TEXT)")
        conn.execute("INSERT INTO ingest_runs (started) VALUES ('2024-01-01')")
    conn.executemany("INSERT INTO seen_mails VALUES (?)", [(i,) for i in ids])
    conn.executemany("INSERT INTO senders VALUES (?, ?)", senders)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()


def double_counted_rust_database(g: GoogleSetup, folder: Path) -> list[FakeMessage]:
    """`g.db` as the Rust tool left it for the whole mailbox, plus a Takeout import of the same mail: double counts
    that `scan --backfill-message-ids` collapses. Returns the messages the Rust tool counted."""
    kept = [g.google.mailbox.messages[i] for i in g.google.mailbox.listed(include_spam_trash=False)]
    counts = Counter(message.header("From") or "" for message in kept)
    rust_database(g.db, version=1, ids=[m.gmail_id for m in kept], senders=list(counts.items()), runs=False)
    mbox = folder / "mail.mbox"
    write_takeout(mbox, [(m, False) for m in kept if m.message_id is not None])
    imported = run_cli("import", mbox, "--db", g.db, "--quiet")
    assert imported.returncode == 0, imported.stderr
    return kept
