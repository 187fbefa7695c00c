"""How a run is told: what it ended as (`RunResult`, the line the CLI prints) and why a run cannot be resumed.

Pure words over a run's values, kept apart from the row's machinery (`ingester.runs.lifecycle`).
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.errors import RunNotFoundError
from shared.runs import Run
from shared.schema.models import RunOutcome, RunState, Source


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run ended as; `detail` is the source's own extra phrase (the scan's listing mode, backfill merges)."""

    run_id: int
    source: Source
    state: RunState
    outcome: RunOutcome
    messages_seen: int
    messages_new: int
    messages_skipped: int
    messages_excluded: int
    resume_command: str
    detail: str = ""
    warnings_count: int = 0

    def summary(self, *, runs_command: str = "gmail-stats runs --verbose") -> str:
        seen, new, skipped = _WORDS[self.source]
        detail = f" ({self.detail})" if self.detail else ""
        excluded = f"{self.messages_excluded:,} excluded (spam/trash/chat), " if self.source != Source.BACKFILL else ""
        warnings = _warnings(self.warnings_count, runs_command)
        # The page's words for a run that ended before counting anything (viewer/static/history.js).
        nothing = self.state != RunState.DONE and self.messages_seen == 0 and self.messages_new == 0
        ended = f"{self.state}, nothing counted" if nothing else f"{self.state}/{self.outcome}"
        if self.source == Source.GMAIL_API and self.messages_new > self.messages_seen:
            new = f"{new} (listed messages' conversations are fetched whole)"  # threads.get settles unlisted ones
        return (
            f"run {self.run_id} {ended}{detail}: {self.messages_seen:,} {seen}, "
            f"{self.messages_new:,} {new}, {excluded}{self.messages_skipped:,} {skipped}{warnings}"
        )


def _warnings(count: int, runs_command: str) -> str:
    if not count:
        return ""
    return f", {count:,} warning{'s' if count != 1 else ''} (listed by `{runs_command}` and on the page)"


_WORDS = {
    Source.MBOX: ("messages read", "new", "skipped"),
    Source.GMAIL_API: ("messages listed", "new", "not fetched"),
    Source.BACKFILL: ("scan rows checked", "Message-IDs filled", "not fetched"),
}


def refuse_resume(run: Run | None, *, run_id: int, source: Source) -> None:
    """Raises `RunNotFoundError` with the reason when run `run_id` cannot be resumed as a `source` run."""
    if run is None:
        raise RunNotFoundError(f"there is no run {run_id}; see `gmail-stats runs`")
    if run.source != source:
        raise RunNotFoundError(
            f"run {run_id} is {_NOUN.get(run.source, f'a {run.source} run')}, not {_NOUN[source]}; "
            f"continue it with {_VERB.get(run.source, 'its own command')}"
        )
    if run.state == RunState.DONE:
        raise RunNotFoundError(f"run {run_id} already finished ({run.outcome}); there is nothing to resume")


_VERB: dict[str, str] = {
    Source.MBOX: "`import`",
    Source.GMAIL_API: "`scan`",
    Source.BACKFILL: "`scan --backfill-message-ids` (running it again continues it)",
}
_NOUN: dict[str, str] = {
    Source.MBOX: "an mbox import",
    Source.GMAIL_API: "a Gmail scan",
    Source.BACKFILL: "a Message-ID backfill",
}
