#!/bin/sh
# The viewer's entrypoint: started as root only to join the Docker socket's group (its GID differs per host),
# then runs as the image's non-root user with no capabilities left. Already non-root: runs as is.
set -eu
socket=/var/run/docker.sock
if [ "$(id -u)" = 0 ]; then
    group=$(stat -c %g "$socket" 2>/dev/null || echo 10001)
    exec setpriv --reuid=10001 --regid=10001 --groups="$group" --inh-caps=-all -- python3 -m viewer "$@"
fi
exec python3 -m viewer "$@"
