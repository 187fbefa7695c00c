"""End-to-end smoke: a tiny Takeout file through the real CLI, then `runs` and `export`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

MBOX = (
    b"From 1785392015443392563@xxx Fri Dec 04 20:33:24 +0000 2020\n"
    b"From: Alice <alice@example.com>\nMessage-ID: <1@example.com>\nX-Gmail-Labels: Inbox,Unread\n\nhi\n"
)


def test_import_then_export(tmp_path: Path, db_path: Path) -> None:
    mbox = tmp_path / "mail.mbox"
    mbox.write_bytes(MBOX)
    result = run_cli("import", mbox, "--db", db_path)
    assert result.returncode == 0, result.stderr
    exported = run_cli("export", "--db", db_path)
    document = json.loads(exported.stdout)
    assert document["total_messages"] == 1
    assert document["senders"] == [
        {
            "sender": "alice@example.com",
            "display_name": "Alice",
            "mails_sent": 1,
            "first_seen_unix": 1607114004,
            "last_seen_unix": 1607114004,
            "bytes": len(MBOX),
            "unread": 1,
            "list_unsubscribe": 0,
        }
    ]
