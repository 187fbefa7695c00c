#!/bin/sh
# `make scan` / `make import`: `docker compose run --rm ARGS…`, with Ctrl-C reaching the ingester either way, so it
# records its run as cancelled and prints how to resume. From a terminal compose passes Ctrl-C on as a keystroke
# (the container gets a TTY). Without one (a script, CI, an IDE) compose v2 answers SIGINT with "canceled" and
# removes the container with SIGKILL: there compose runs in a session of its own (`setsid`, util-linux), out of the
# signal's reach, and this script hands SIGINT/SIGTERM to the ingester by container name.
set -u
if [ -t 0 ] || ! command -v setsid >/dev/null 2>&1; then
    exec docker compose run --rm "$@"
fi
name="gmail-stats-ingester-$$"
setsid -w docker compose run --rm --name "$name" "$@" &
child=$!
# Before the container exists (still building or creating), compose itself gets the signal and gives up.
trap 'docker kill --signal INT "$name" >/dev/null 2>&1 || kill -s INT "$child"' INT
trap 'docker kill --signal TERM "$name" >/dev/null 2>&1 || kill -s TERM "$child"' TERM
while :; do
    wait "$child"
    status=$?
    kill -0 "$child" 2>/dev/null || exit "$status"
done
