"""Paging at the edge of the API's integer range: a page far past the end is empty, never a 500.

Found by the schemathesis fuzzer (`offset` up to 2**63-1 is valid; `offset + limit` must still bind in SQLite).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.viewer import make_settings, seed, viewer


@pytest.mark.parametrize("path", ["/api/senders", "/api/domains"])
@pytest.mark.parametrize("sort", ["mails_sent", "bytes"])
def test_a_page_past_the_largest_offset_is_empty(tmp_path: Path, db_path: Path, path: str, sort: str) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path)) as client:
        response = client.get(path, params={"offset": 2**63 - 1, "limit": 50, "sort": sort, "order": "asc"})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["total"] > 0
        assert body["senders" if path == "/api/senders" else "domains"] == []
