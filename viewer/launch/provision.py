"""`python -m viewer.launch.provision`: the viewer entrypoint's one privileged step, before any untrusted input is read.

Run as root with the engine's socket: finds this container's stack, creates its pools of runner containers, writes
their names for the web process and prints them for the API filter. The web process itself can never create a container.
"""

from __future__ import annotations

import sys
from contextlib import closing

from viewer.launch.launch_docker import RUNNERS_FILE, connect, provision_own_stack
from viewer.launch.launcher import LaunchError


def main() -> int:
    try:
        with closing(connect()) as client:
            runners = provision_own_stack(client)
    except LaunchError as exc:
        sys.stderr.write(f"viewer-entrypoint: {exc}; {exc.hint}\n")
        return 1
    RUNNERS_FILE.write_text(runners.to_json())
    if runners.problem:
        sys.stderr.write(f"viewer-entrypoint: no scan runners: {runners.problem}\n")
    # The filter's allow-list: the names as one alternation (container names hold no other regex character).
    sys.stdout.write("|".join(name for _, _, name in runners.slots()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
