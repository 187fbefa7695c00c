"""A launch request: what the viewer asks one ingester run to do, and the command line it becomes. Only data: the
viewer's launchers pass that command line or write the request a runner reads, and the runner builds the same line
here once it has checked the file as untrusted input (`ingester.runs.run_request`)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from shared.accounts import DEFAULT_ACCOUNT, Refresh, check_name

REQUEST_VERSION = 1  # the request file's `version`: the viewer writes it, a runner runs no other


class LaunchCommand(StrEnum):
    SCAN = "scan"
    IMPORT = "import"
    ACCOUNT = "account"  # `gmail-stats account --refresh …/--address …`: the viewer never writes settings itself


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """What to run. `import_path` is relative to the import folder; `launch_token` (random, one per request) goes to
    the ingester as `GMAIL_STATS_LAUNCH_TOKEN` and comes back on its run row (`shared.runs.run_by_launch_token`)."""

    command: LaunchCommand
    launch_token: str = field(default_factory=lambda: secrets.token_hex(16))
    import_path: str | None = None
    resume_run_id: int | None = None
    account: str = DEFAULT_ACCOUNT  # the ingester's `--account` (a name checked by `shared.accounts`)
    unattended: bool = False  # a scan nobody watches (a scheduled refresh): `--unattended`, never a consent wait
    refresh: str | None = None  # ACCOUNT: the new refresh interval
    address: str | None = None  # ACCOUNT: the Gmail address typed for a Takeout-only account

    def argv(self, *, import_dir: Path) -> list[str]:
        """The ingester's arguments but the program, the token and `--quiet`: what a request supplies (a path under
        `import_dir`, a run id, an account, for `account` a refresh choice or an address) is checked before."""
        argv = [str(self.command)]
        if self.command is LaunchCommand.IMPORT:
            if self.import_path is None:
                raise ValueError("an import needs import_path")
            # The ingester re-checks the path: inside the folder, a regular file, no link followed on the way.
            argv += [str(import_dir / self.import_path), "--confine-to", str(import_dir)]
        if self.resume_run_id is not None:
            argv += ["--resume", str(int(self.resume_run_id))]
        if self.account != DEFAULT_ACCOUNT:
            argv += ["--account", check_name(self.account)]
        if self.refresh is not None:
            argv += ["--refresh", str(Refresh(self.refresh))]
        if self.address is not None:
            argv.append(f"--address={self.address}")  # one word: an address may start with `-`
        if self.unattended:
            argv.append("--unattended")
        return argv
