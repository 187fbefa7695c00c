"""`python -m viewer.launch.provision`: the viewer entrypoint's one privileged step, before any untrusted input is read.

Run as root with the engine's socket: finds this container's stack, creates its two runner containers, writes their
names for the web process and prints them for the API filter. The web process itself can never create a container.
"""

from __future__ import annotations

import sys

from viewer.launch.launch_docker import RUNNERS_FILE, connect, provision_own_stack
from viewer.launch.launcher import LaunchError


def main() -> int:
    try:
        client = connect()
        try:
            runners = provision_own_stack(client)
        finally:
            client.close()
    except LaunchError as exc:
        sys.stderr.write(f"viewer-entrypoint: {exc}; {exc.hint}\n")
        return 1
    RUNNERS_FILE.write_text(runners.to_json())
    if runners.problem:
        sys.stderr.write(f"viewer-entrypoint: no scan runner: {runners.problem}\n")
    # For the filter's allow-list; a missing scan runner is a name nothing can match.
    sys.stdout.write(f"{runners.import_name} {runners.scan_name or runners.import_name}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
