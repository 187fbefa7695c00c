"""A fuzz corpus of 1,000 mutated mbox files through the real import: no traceback, no hang, bounded memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.process_tree import TreeSampler
from tests.conftest import REPO_ROOT, ingester_env
from tests.mbox.fuzz_corpus import write_corpus

CORPUS_FILES = 1000
RSS_LIMIT_KB = 150 * 1024


def _cli_import(path: Path, db: Path, *, timeout: float) -> tuple[subprocess.CompletedProcess[str], int]:
    """Runs `gmail-stats import` (default settings: parse workers) and samples the RSS of its process tree."""
    process = subprocess.Popen(
        [sys.executable, "-m", "ingester", "import", str(path), "--db", str(db), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=ingester_env(),
        cwd=REPO_ROOT,
    )
    sampler = TreeSampler(process.pid)
    sampler.start()
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        process.kill()
        sampler.stopped.set()
        sampler.join()
    completed = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return completed, sampler.peak_tree_kb


@pytest.mark.slow
def test_fuzz_corpus_imports_with_no_traceback_no_hang_and_bounded_memory(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    paths = write_corpus(corpus, CORPUS_FILES)

    # Every file through the real importer, one process (a hang would trip the timeout).
    runner = subprocess.run(
        [sys.executable, "-m", "tests.mbox.fuzz_corpus", str(corpus), str(tmp_path / "each.db")],
        capture_output=True,
        text=True,
        timeout=240,
        env=ingester_env(),
        cwd=REPO_ROOT,
    )
    assert runner.returncode == 0, runner.stderr
    summary = json.loads(runner.stdout)
    assert summary["failures"] == []
    assert summary["imported"] + summary["refused"] == CORPUS_FILES
    assert summary["imported"] > CORPUS_FILES * 0.9
    assert summary["peak_rss_kb"] < RSS_LIMIT_KB

    # All of them as one file through the real CLI with its parse-worker processes, and a few files alone.
    together = tmp_path / "together.mbox"
    with together.open("wb") as out:
        for path in paths:
            out.write(path.read_bytes())
    result, peak_kb = _cli_import(together, tmp_path / "together.db", timeout=240)
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    assert "Traceback" not in result.stderr
    assert peak_kb < RSS_LIMIT_KB
    for path in paths[:: CORPUS_FILES // 4]:
        single, _ = _cli_import(path, tmp_path / "single.db", timeout=60)
        assert single.returncode in (0, 2), single.stderr  # 2: refused as not an mbox, in one line
        assert "Traceback" not in single.stderr and len(single.stderr.splitlines()) <= 2
