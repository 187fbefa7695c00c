#!/bin/sh
# The viewer's entrypoint. Started as root only to (1) create the stack's runner containers with the engine's
# socket (`python -m viewer.launch.provision`), (2) start the Docker API filter (HAProxy) as uid 10002 with the socket's
# group, and (3) run the web process as uid 10001 with no supplementary group, so it can reach the filter's socket
# but never the engine's. The web process has no capabilities; only the filter's watcher (a root shell that runs
# nothing but HAProxy and, when it dies, `kill -TERM 1` as the web user) keeps CAP_SETUID/CAP_SETGID, out of the
# web process's reach (another user: no signals, no ptrace). Already non-root: runs the viewer as is.
set -eu
socket=/var/run/docker.sock
filter_dir=/run/docker-api-filter
if [ "$(id -u)" != 0 ]; then
    exec python3 -m viewer "$@"
fi
if [ -S "$socket" ]; then
    # The runners' names as one alternation (`a-import-runner|a-import-runner-2|…`) for the filter's allow-list.
    GMAIL_STATS_RUNNERS=$(python3 -m viewer.launch.provision)
    GMAIL_STATS_FILTER_SOCKET=$filter_dir/docker.sock
    export GMAIL_STATS_RUNNERS GMAIL_STATS_FILTER_SOCKET
    group=$(stat -c %g "$socket")
    # HAProxy's watcher: a filter that dies ends the web process (PID 1) as its own user, so the container exits
    # and compose's `restart: unless-stopped` starts both again; the health check reports the gap meanwhile.
    (
        setpriv --reuid=10002 --regid=10002 --groups="$group" --inh-caps=-all -- \
            haproxy -db -f /etc/gmail-stats/docker-api-filter.cfg || true
        echo "viewer-entrypoint: the Docker API filter stopped; stopping the viewer so that it restarts" >&2
        exec setpriv --reuid=10001 --regid=10001 --clear-groups --inh-caps=-all -- sh -c 'kill -TERM 1'
    ) &
    tries=0
    until [ -S "$GMAIL_STATS_FILTER_SOCKET" ]; do
        tries=$((tries + 1))
        [ "$tries" -le 100 ] || { echo "viewer-entrypoint: the Docker API filter did not start" >&2; exit 1; }
        sleep 0.1
    done
    unset GMAIL_STATS_RUNNERS GMAIL_STATS_FILTER_SOCKET
    export DOCKER_HOST="unix://$filter_dir/docker.sock"
fi
exec setpriv --reuid=10001 --regid=10001 --clear-groups --inh-caps=-all -- python3 -m viewer "$@"
