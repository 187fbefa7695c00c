"""Fixtures the runs room's modules share: an import folder with a file inside it and others outside."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def imports(tmp_path: Path) -> Path:
    """`imports/Takeout/a.mbox` inside; `outside.mbox` and `elsewhere/a.mbox` beside the folder, in `tmp_path`."""
    root = tmp_path / "imports"
    (root / "Takeout").mkdir(parents=True)
    (root / "Takeout" / "a.mbox").write_bytes(b"From x Mon Jan  1 00:00:00 2024\n\n")
    (tmp_path / "outside.mbox").write_bytes(b"From x Mon Jan  1 00:00:00 2024\n\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.mbox").write_bytes(b"From x Mon Jan  1 00:00:00 2024\n\n")
    return root
