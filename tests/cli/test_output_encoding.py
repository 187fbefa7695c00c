"""Outputs a person opens elsewhere are encoded for where they go (issue 26): the two CSV writers neutralise
formulas, read back with Python's csv module; unsubscribe `mailto:` links keep only the address and a subject."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from shared.text.csv_cells import FORMULA_STARTS, neutralise_cell
from shared.text.unsubscribe_links import clean_mailto, clean_target
from tests.conftest import REPO_ROOT, run_cli
from tests.support.hostile_senders import CLEAN_MAILTO, HOSTILE, hostile_mbox
from tests.support.viewer import make_settings, seed, viewer

TEXT_COLUMNS = ("sender", "display_name", "domain")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("a=1", "a=1"),
        (" =1", " =1"),
        ("", ""),
        ("'already", "'already"),
        (-1, -1),  # numbers are numbers, not formulas
        (0.5, 0.5),
        (None, None),
    ],
)
def test_neutralise_cell(value: object, expected: object) -> None:
    assert neutralise_cell(value) == expected


def _imported(tmp_path: Path) -> Path:
    mbox = tmp_path / "hostile.mbox"
    mbox.write_bytes(hostile_mbox())
    db = tmp_path / "stats.db"
    result = run_cli("import", mbox, "--db", db)
    assert result.returncode == 0, result.stderr
    return db


def _assert_no_formula(rows: list[dict[str, str]], shown: dict[str, str]) -> None:
    """`rows` (read back by a CSV reader) hold every hostile sender, each text cell as `shown` on the page with a
    `'` in front when it starts a formula, and no cell starts one."""
    assert {row["sender"] for row in rows} == {"'" + a if a.startswith(FORMULA_STARTS) else a for a, _, _ in HOSTILE}
    names = {row["sender"].removeprefix("'"): row["display_name"] for row in rows}
    assert names == {a: "'" + n if n.startswith(FORMULA_STARTS) else n for a, n in shown.items()}
    for row in rows:
        for column, cell in row.items():
            assert not cell.startswith(FORMULA_STARTS), (column, cell)


def test_both_csv_writers_neutralise_formulas(tmp_path: Path) -> None:
    db = _imported(tmp_path)
    with viewer(make_settings(tmp_path)) as client:
        response = client.get("/api/export.csv")
        senders = client.get("/api/senders", params={"limit": 100}).json()["senders"]
    # The page and the JSON show the names as they came: only a spreadsheet reads `=` as an instruction.
    shown = {s["sender"]: s["display_name"] for s in senders}
    assert sum(name.startswith(FORMULA_STARTS) for name in shown.values()) == 4
    assert response.status_code == 200
    _assert_no_formula(list(csv.DictReader(io.StringIO(response.text, newline=""))), shown)
    target = tmp_path / "senders.csv"
    exported = run_cli("export", "--format", "csv", "--output", target, "--db", db)
    assert exported.returncode == 0, exported.stderr
    with target.open(newline="", encoding="utf-8") as handle:
        _assert_no_formula(list(csv.DictReader(handle)), shown)


def test_unsubscribe_targets_keep_only_what_is_safe(tmp_path: Path) -> None:
    db = _imported(tmp_path)
    with viewer(make_settings(tmp_path)) as client:
        senders = client.get("/api/senders", params={"limit": 100}).json()["senders"]
    targets = {s["sender"]: s["unsubscribe_url"] for s in senders}
    assert targets["mailer@evil.example"] == CLEAN_MAILTO
    assert targets["plain@evil.example"] == "http://evil.example/unsub?u=1"
    assert db.exists()


def test_a_mailto_stored_before_the_rule_is_cleaned_when_shown(tmp_path: Path) -> None:
    dirty = "mailto:u@odd.example?bcc=spy@evil.example&body=hi&attach=/etc/passwd&subject=bye"
    seed(tmp_path / "stats.db", [("old@odd.example", "Old", 2, 1_650_000_000, 1_650_000_000, 1_000, 0, 1, dirty)])
    with viewer(make_settings(tmp_path)) as client:
        (sender,) = client.get("/api/senders").json()["senders"]
        exported = list(csv.DictReader(io.StringIO(client.get("/api/export.csv").text, newline="")))
    assert sender["unsubscribe_url"] == "mailto:u@odd.example?subject=bye"
    assert exported[0]["unsubscribe_url"] == "mailto:u@odd.example?subject=bye"


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("mailto:u@x.org", "mailto:u@x.org"),
        ("MAILTO:u@x.org?Subject=stop%20it", "mailto:u@x.org?subject=stop%20it"),
        ("mailto:u@x.org?bcc=a@b.c&body=b&attach=/home/user/.ssh/id_rsa", "mailto:u@x.org"),
        ("mailto:u@x.org?subject=a%0D%0ABcc:%20spy@x.org", "mailto:u@x.org?subject=aBcc%3A%20spy%40x.org"),
        ("mailto:100%25_real@odd.example", "mailto:100%25_real@odd.example"),
        ("mailto:a@x.org,b@y.org", None),  # a second recipient
        ("mailto:a@x.org%2Cb@y.org", None),
        ("mailto:?to=a@x.org", None),
        ("mailto:nobody", None),
        ("mailto:@x.org", None),
        ("mailto:a@", None),
        ("mailto:%3Ca@x.org%3E", None),
    ],
)
def test_clean_mailto(uri: str, expected: str | None) -> None:
    assert clean_mailto(uri) == expected
    assert clean_target(uri) == expected


def test_clean_target_leaves_web_links_and_none() -> None:
    assert clean_target("https://x.org/u?bcc=1") == "https://x.org/u?bcc=1"
    assert clean_target(None) is None


def test_the_attack_matrix_names_tests_that_exist() -> None:
    """docs/security.md's attack matrix cites `tests/room/test_x.py::name` (then `::other` of the same file): each
    exists."""
    doc = (REPO_ROOT / "docs" / "security.md").read_text()
    matrix = doc[doc.index("### Attack matrix") : doc.index("## Docker confinement design")]
    cited: list[tuple[str, str]] = []
    for cell in re.findall(r"`((?:tests/\w+/test_\w+\.py)?::\w+|tests/\w+/test_\w+\.py)`", matrix):
        file, _, name = cell.partition("::")
        if file:
            current = file
        if name:
            cited.append((current, name))
    assert len(cited) > 20
    missing = [(f, n) for f, n in cited if not re.search(rf"^def {n}\(", (REPO_ROOT / f).read_text(), re.M)]
    assert missing == []
