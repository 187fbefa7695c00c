"""Cross-source exactness: a message seen by both the Takeout import and the API scan counts once, either order."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fakes.mailbox import FakeMessage
from tests.fakes.takeout import write_takeout
from tests.support.scan import GoogleSetup, fake_google, runs, sender_counts


def _takeout(g: GoogleSetup, path: Path) -> list[FakeMessage]:
    """The oldest 400 messages: half with a postmark equal to the Gmail id, half matched only by Message-ID.

    A message without a Message-ID is only recognisable by its postmark, so those always match.
    """
    box = g.google.mailbox
    chosen = [box.messages[i] for i in box.order[-400:]]
    write_takeout(path, [(m, i % 2 == 0 or m.message_id is None) for i, m in enumerate(chosen)])
    return chosen


@pytest.mark.parametrize("order", ["import_then_scan", "scan_then_import"])
def test_a_message_seen_by_both_ingesters_counts_once(tmp_path: Path, order: str) -> None:
    with fake_google(tmp_path, 900) as g:
        mbox = tmp_path / "mail.mbox"
        _takeout(g, mbox)
        steps: list[Callable[[], subprocess.CompletedProcess[str]]] = [
            lambda: run_cli("import", mbox, "--db", g.db),
            lambda: g.scan(),
        ]
        if order == "scan_then_import":
            steps.reverse()
        for step in steps:
            result = step()
            assert result.returncode == 0, result.stderr
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()
        scan = next(r for r in runs(g.db) if r["source"] == "gmail_api")
        imported = next(r for r in runs(g.db) if r["source"] == "mbox")
        listed = len(g.google.mailbox.listed(include_spam_trash=False))
        assert int(scan["messages_new"]) + int(imported["messages_new"]) == listed
        if order == "import_then_scan":
            # Messages whose postmark is their Gmail id were not even fetched.
            assert g.google.calls["get"] < listed - 150
