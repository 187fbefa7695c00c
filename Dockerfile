# One image for both services: the ingester (default entrypoint) and the viewer (compose overrides the entrypoint).
# CI and these machines build FROM a debootstrapped Debian base (`.ci/docker-setup.sh`); elsewhere python:3.12-slim.
ARG PYTHON_IMAGE=python:3.12-slim

# Build stage: the runtime lock (.ci/requirements/runtime.txt, hash-pinned; `make lock`) installed into /opt/venv.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY .ci/requirements/runtime.txt requirements.txt
# Google's client ships ~110 MB of discovery documents; the scan only uses Gmail's. Bytecode stays: the root
# filesystem is read-only at run time, so compiled modules are what keeps a launch fast.
# PRUNED: installed as dependencies but never imported by what we run: google-auth's pure-Python RSA fallback's
# ASN.1 (pyasn1; cryptography is the one it uses), rich's syntax highlighting and Markdown (pygments, markdown_it),
# SQLAlchemy's asyncio bridge (greenlet) and its other databases' dialects and test suite. Our code and Google's
# OAuth and API clients import without them (tests/docker/test_docker_image.py checks it).
ARG PRUNED="pyasn1 pyasn1-* pyasn1_modules pyasn1_modules-* pygments pygments-* markdown_it markdown_it_py-* \
mdurl mdurl-* greenlet greenlet-*"
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --quiet --require-hashes --no-deps -r requirements.txt \
    && find /opt/venv/lib/python3*/site-packages/googleapiclient/discovery_cache/documents \
        -name '*.json' ! -name 'gmail.*' -delete \
    && cd /opt/venv/lib/python3*/site-packages \
    && rm -rf pip pip-* setuptools setuptools-* pkg_resources _distutils_hack distutils-precedence.pth \
    && rm -rf $PRUNED sqlalchemy/testing \
    && cd sqlalchemy/dialects && rm -rf mssql mysql oracle postgresql

# Runtime stage: the venv, the three packages, HAProxy from Debian (the viewer's Docker API filter), two non-root
# users (10001 runs the web process and the ingesters, 10002 only the filter); nothing else.
FROM ${PYTHON_IMAGE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy >/dev/null \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
    && useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin gmailstats \
    && useradd --uid 10002 --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin dockerproxy \
    && mkdir -p /data /imports /secrets /requests \
    && chown gmailstats:gmailstats /data /secrets /requests
COPY --from=build /opt/venv /opt/venv
COPY shared /app/shared
COPY ingester /app/ingester
COPY viewer /app/viewer
COPY docker/viewer-entrypoint.sh /usr/local/bin/viewer-entrypoint
COPY docker/docker-api-filter.cfg /etc/gmail-stats/docker-api-filter.cfg
RUN python3 -m compileall -q /app
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    GMAIL_STATS_DB=/data/stats.db \
    GMAIL_STATS_IMPORT_DIR=/imports
WORKDIR /app
USER 10001:10001
# The ingester installs SIGTERM/SIGINT handlers itself, so `docker stop` (SIGTERM to PID 1) records `cancelled`.
ENTRYPOINT ["python3", "-m", "ingester"]
CMD ["--help"]
