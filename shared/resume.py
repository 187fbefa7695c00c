"""The commands a person can paste as they are shown (import, scan, resume): pure functions for the ingester and
the viewer.

A resume command must name everything the resumed run depends on (database, file, run id). Every command is quoted
for a POSIX shell and written in the form that works where the person is: the `gmail-stats` CLI, or the Makefile's
`make` verbs on a Docker host (with the host's paths: the container's never work there). `make_command` is the one
place a `make` line is built; its values stay data for make too (see there).
"""

from __future__ import annotations

import shlex
from enum import StrEnum

from shared.schema.models import Source


class CommandStyle(StrEnum):
    CLI = "cli"
    MAKE = "make"


def make_command(verb: str, **variables: str | int) -> str:
    """`make VERB NAME=value…` with each value one shell word (`shlex.quote`).

    Quoting for the shell is all a value needs: the Makefile reads MBOX and RESUME with `$(value …)` and hands them
    to its recipes through the environment, so make never expands `$(shell …)` in a file name and the recipe's
    shell never parses one (tests/docker/test_makefile.py runs hostile names through the real Makefile).
    """
    assignments = [f"{name}={shlex.quote(str(value))}" for name, value in variables.items()]
    return " ".join(["make", verb, *assignments])


def _cli(argv: list[str], db: str | None, account: str | None = None) -> str:
    named = ["--account", account] if account else []
    return shlex.join([*argv, "--db", db, *named] if db is not None else [*argv, *named])


def _make(verb: str, account: str | None, **variables: str | int) -> str:
    return make_command(verb, **variables, **({"ACCOUNT": account} if account else {}))


def import_command(
    *, path: str, style: CommandStyle = CommandStyle.CLI, db: str | None = None, account: str | None = None
) -> str:
    """The command that imports `path`, the file as the person names it (on a Docker host: the host's path).

    `db` is the database to name with `--db` (the viewer's own, so a pasted command fills the page's file); the
    `make` verbs know the stack's database, so they never take one; `account` names an account other than the
    default (`--account`, `ACCOUNT=`).
    """
    if style == CommandStyle.MAKE:
        return _make("import", account, MBOX=path)
    return _cli(["gmail-stats", "import", path], db, account)


def scan_command(style: CommandStyle = CommandStyle.CLI, db: str | None = None, account: str | None = None) -> str:
    return _make("scan", account) if style == CommandStyle.MAKE else _cli(["gmail-stats", "scan"], db, account)


def runs_command(style: CommandStyle = CommandStyle.CLI, db: str | None = None, account: str | None = None) -> str:
    """The command that lists the runs with their warnings and errors (what to read when the page cannot)."""
    if style == CommandStyle.MAKE:
        return _make("runs", account)
    return _cli(["gmail-stats", "runs", "--verbose"], db, account)


def resume_command(
    *,
    source: str,
    run_id: int,
    style: CommandStyle = CommandStyle.CLI,
    db: str | None = None,
    mbox_path: str | None = None,
    account: str | None = None,
) -> str:
    """The command that continues run `run_id` of `source`.

    `db` is the database to repeat with `--db` (None for the default one); `mbox_path` the file an import read,
    as the person knows it (on a Docker host: the host path given to `make import MBOX=`). A backfill is never
    reopened: running it again is its resume.
    """
    named = {"ACCOUNT": account} if account else {}
    if style == CommandStyle.MAKE:
        if source == Source.MBOX:
            return make_command("import", MBOX=mbox_path or "PATH", RESUME=run_id, **named)
        if source == Source.BACKFILL:
            flags = f" --account {shlex.quote(account)}" if account else ""
            return f"docker compose run --rm --service-ports ingester scan --backfill-message-ids{flags}"
        return make_command("scan", RESUME=run_id, **named)
    if source == Source.MBOX:
        argv = ["gmail-stats", "import", mbox_path or "PATH", "--resume", str(run_id)]
    elif source == Source.BACKFILL:
        argv = ["gmail-stats", "scan", "--backfill-message-ids"]
    else:
        argv = ["gmail-stats", "scan", "--resume", str(run_id)]
    if db is not None:
        argv += ["--db", db]
    if account:
        argv += ["--account", account]
    return shlex.join(argv)
