"""The command line's value types and parser: run ids and counts range-checked before they reach SQLite, and a
bad command line answered in one line. Pure argparse; `ingester/cli.py` builds the commands from these."""

from __future__ import annotations

import argparse
from typing import NoReturn

from shared.accounts import check_name
from shared.errors import UsageError

MAX_RUN_ID = 2**63 - 1  # SQLite's INTEGER PRIMARY KEY is a signed 64-bit integer


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a bad command line answered in one line (house rule) instead of usage plus error."""

    def error(self, message: str) -> NoReturn:
        self.exit(UsageError.exit_code, f"{self.prog}: {message} (see {self.prog} --help)\n")


def run_id_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a run id (a whole number)") from None
    if not 0 < value <= MAX_RUN_ID:
        raise argparse.ArgumentTypeError(f"{text} is not a run id (1 to {MAX_RUN_ID}; `gmail-stats runs` lists them)")
    return value


def count_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= MAX_RUN_ID:
        raise argparse.ArgumentTypeError(f"{text} is out of range (0 to {MAX_RUN_ID})")
    return value


def account_arg(text: str) -> str:
    if "@" in text:
        raise argparse.ArgumentTypeError(f"{text!r} is an address; --account takes an account's name (see --address)")
    try:
        return check_name(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
