"""`python -m bench [NAME] [ARGS...]`: run every `bench/bench_*.py` module in name order, or only `bench_NAME`.

Each module exposes `main(argv: list[str] | None) -> int`; the remaining arguments go to every module run.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import cast

PREFIX = "bench_"
BenchMain = Callable[[list[str] | None], int]


def discover() -> list[str]:
    """Names of the benchmarks found beside this file, without the `bench_` prefix, sorted."""
    found = pkgutil.iter_modules([str(Path(__file__).parent)])
    return sorted(info.name.removeprefix(PREFIX) for info in found if info.name.startswith(PREFIX))


def load(name: str) -> BenchMain:
    module = importlib.import_module(f"bench.{PREFIX}{name}")
    return cast(BenchMain, module.main)


def usage(names: list[str]) -> str:
    return (
        "usage: python -m bench [NAME] [ARGS...]\n"
        f"benchmarks: {', '.join(names) or '(none)'}; without NAME all of them run, one after the other.\n"
        "Example:\n  python -m bench import --quick\n  python -m bench import --help"
    )


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    names = discover()
    if args[:1] in (["-h"], ["--help"]):
        print(usage(names))
        return 0
    if args and not args[0].startswith("-"):
        if args[0] not in names:
            print(f"unknown benchmark {args[0]!r}\n{usage(names)}", file=sys.stderr)
            return 2
        names, args = [args[0]], args[1:]
    worst = 0
    for name in names:
        print(f"## bench {name}", flush=True)
        worst = max(worst, load(name)(args))
    return worst


if __name__ == "__main__":
    sys.exit(main())
