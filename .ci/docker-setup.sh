#!/usr/bin/env bash
# Docker on a bare Debian 12 machine, idempotent and quick when already in place: docker.io + debootstrap,
# compose v2 and buildx from trixie (pinned low), dockerd in the background, and the Python base image
# `gmail-stats/python-base:local` debootstrapped from Debian packages (no registry is reachable here).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
BASE_IMAGE=gmail-stats/python-base:local
START=$(date +%s)
log() { echo "docker-setup: $*" >&2; }

# Another job may hold apt's locks (e.g. installing chromium): wait for them, and retry a few times.
apt_get() {
    local attempt
    for attempt in 1 2 3 4 5 6; do
        if apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 "$@"; then
            return 0
        fi
        log "apt-get $* failed (attempt $attempt); retrying in 20 s"
        sleep 20
    done
    return 1
}

# The Debian mirror this machine's apt already uses (either sources format), never a hard-coded one: the same
# mirror then serves trixie's compose/buildx and the debootstrapped base image.
mirror_uri() {
    apt-get indextargets --no-release-info --format '$(RELEASE) $(REPO_URI)' | awk '$1 == "bookworm" {print $2; exit}'
}
MIRROR=$(mirror_uri)
MIRROR=${MIRROR%/}
if [ -z "$MIRROR" ]; then
    log "apt has no Debian bookworm source configured (see: apt-get indextargets); add your mirror under /etc/apt/sources.list.d/"
    exit 1
fi

# 1. The engine and debootstrap from bookworm.
if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    log "installing docker.io and debootstrap"
    apt_get update -qq
    apt_get install -y -qq --no-install-recommends docker.io debootstrap iptables
fi

# 2. Compose v2 and buildx from trixie, pinned low so nothing else is upgraded.
if ! docker compose version >/dev/null 2>&1 || ! docker buildx version >/dev/null 2>&1; then
    log "installing docker-compose and docker-buildx from trixie ($MIRROR)"
    cat >/etc/apt/sources.list.d/trixie.sources <<EOF
Types: deb
URIs: $MIRROR
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    cat >/etc/apt/preferences.d/trixie-low <<'EOF'
Package: *
Pin: release n=trixie
Pin-Priority: 100
EOF
    apt_get update -qq
    apt_get install -y -qq --no-install-recommends -t trixie docker-compose docker-buildx
fi

# 3. The daemon, in the background (no init system here).
if ! docker info >/dev/null 2>&1; then
    log "starting dockerd"
    setsid nohup dockerd >/var/log/dockerd.log 2>&1 </dev/null &
    for _ in $(seq 1 120); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
    docker info >/dev/null 2>&1 || { tail -n 30 /var/log/dockerd.log >&2; log "dockerd did not come up"; exit 1; }
fi

# 4. The Python base image, built once and reused while it exists.
if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    log "debootstrapping $BASE_IMAGE from $MIRROR"
    ROOTFS=$(mktemp -d /var/tmp/gmail-stats-rootfs.XXXXXX)
    trap 'rm -rf "$ROOTFS"' EXIT
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$ROOTFS" "$MIRROR" \
        >/var/log/gmail-stats-debootstrap.log 2>&1 || { tail -n 30 /var/log/gmail-stats-debootstrap.log >&2; exit 1; }
    # The package index is reached through this machine's trust store; the image needs the same one for pip.
    cp /etc/ssl/certs/ca-certificates.crt "$ROOTFS/etc/ssl/certs/ca-certificates.crt"
    # Trim what a Python runtime never needs (docs, man pages, apt lists): a smaller base for every image.
    rm -rf "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* "$ROOTFS"/usr/share/locale/* \
        "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/apt/archives/*.deb
    tar -C "$ROOTFS" -c . | docker import \
        --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
fi

log "ready in $(($(date +%s) - START)) s: $(docker compose version --short 2>/dev/null), $(docker version --format 'engine {{.Server.Version}}')"
