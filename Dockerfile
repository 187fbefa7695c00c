# One image for both services: the ingester (default entrypoint) and the viewer (compose overrides the entrypoint).
# CI and these machines build FROM a debootstrapped Debian base (`.ci/docker-setup.sh`); elsewhere python:3.12-slim.
ARG PYTHON_IMAGE=python:3.12-slim

# Build stage: the runtime lock (.ci/requirements/runtime.txt, hash-pinned; `make lock`) installed into /opt/venv,
# pruned, compiled and stripped there; binutils (for `strip`) stays in this stage.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends binutils >/dev/null
WORKDIR /src
COPY .ci/requirements/runtime.txt requirements.txt
# Google's client ships ~110 MB of discovery documents; the scan only uses Gmail's.
# PRUNED: installed as dependencies but never imported by what we run: google-auth's pure-Python RSA fallback's
# ASN.1 (pyasn1; cryptography is the one it uses), rich's syntax highlighting and Markdown (pygments, markdown_it),
# SQLAlchemy's asyncio bridge (greenlet, ext/asyncio), its other databases' dialects and test suite, and its and
# pydantic's mypy plugins; google-api-core's protobuf side (protobuf with google/_upb, googleapis-common-protos'
# google/{api,cloud,gapic,logging,longrunning,rpc,type}, proto-plus): the discovery-based Gmail client never loads
# it; cffi's Python package and pycparser, which only generate bindings (cryptography's compiled binding loads just
# `_cffi_backend`, which stays). Our code and Google's OAuth and API clients run without them
# (tests/docker/test_docker_image.py scans a fake Gmail and imports an mbox inside the image to check it).
ARG PRUNED="pyasn1 pyasn1-* pyasn1_modules pyasn1_modules-* pygments pygments-* markdown_it markdown_it_py-* \
mdurl mdurl-* greenlet greenlet-* google/protobuf google/_upb protobuf-* google/api google/cloud google/gapic \
google/logging google/longrunning google/rpc google/type googleapis_common_protos-* proto proto_plus-* \
cffi cffi-* pycparser pycparser-* sqlalchemy/testing sqlalchemy/ext/asyncio sqlalchemy/ext/mypy pydantic/mypy.py \
pydantic/v1/mypy.py fastapi/.agents pyparsing/ai"
# Sourceless bytecode: each module compiled once to `name.pyc` beside it (`compileall -b`), then the sources, the
# `__pycache__` copies and the type stubs go (~45 MB of the venv's 78). The root filesystem is read-only at run time,
# so compiled modules were always what a launch loads; tracebacks from these packages lose their source lines, ours
# (/app) keep them. Package data (discovery document, CA bundles, the public suffix list) stays where it was.
# KEEP_SOURCE: modules that read their own source at import. anyio's lazy importer parses its `__init__.py` for the
# names to load on first use; without it anyio imports all its submodules (~35 ms more per start).
ARG KEEP_SOURCE="anyio/__init__.py anyio/abc/__init__.py"
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --quiet --require-hashes --no-deps -r requirements.txt \
    && find /opt/venv/lib/python3*/site-packages/googleapiclient/discovery_cache/documents \
        -name '*.json' ! -name 'gmail.*' -delete \
    && cd /opt/venv/lib/python3*/site-packages \
    && rm -rf pip pip-* setuptools setuptools-* pkg_resources _distutils_hack distutils-precedence.pth \
    && rm -rf $PRUNED \
    && (cd sqlalchemy/dialects && rm -rf mssql mysql oracle postgresql) \
    && (cd /opt/venv/bin && rm -f pip pip3 pip3.* pygmentize markdown-it cffi-gen-src Activate.ps1) \
    && /opt/venv/bin/python -m compileall -b -q -j 0 "$PWD" \
    && find . \( -name '*.py' -o -name '*.pyi' -o -name '*.pyx' -o -name '*.pxd' \) -type f \
        $(printf '! -path ./%s ' $KEEP_SOURCE) -delete \
    && find . -name __pycache__ -type d -prune -exec rm -rf {} + \
    && for kept in $KEEP_SOURCE; do rm "${kept}c"; done \
    && /opt/venv/bin/python -m compileall -q --invalidation-mode unchecked-hash $(printf "$PWD/%s " $KEEP_SOURCE) \
    && find . -name '*.so' -type f -exec strip --strip-unneeded {} +

# Runtime stage: the venv, the three packages, HAProxy from Debian (the viewer's Docker API filter), two non-root
# users (10001 runs the web process and the ingesters, 10002 only the filter); nothing else.
# TRIMMED: what the base ships that nothing here runs: glibc's iconv charset modules (gconv; Python decodes with its
# own codecs), the wheels and stdlib parts that make venvs and install or convert code (python-wheels, ensurepip,
# pip, lib2to3), the interactive help's topics (pydoc_data), the GUI toolkit and IDE (tkinter, idlelib, turtledemo)
# and CPython's own test helpers. tests/docker/test_docker_image.py imports every module of ours and what they load at
# run time, and runs a scan, an import and the viewer inside the image, to check it.
FROM ${PYTHON_IMAGE} AS runtime
ARG TRIMMED="/usr/lib/*/gconv /usr/share/python-wheels /usr/local/bin/pip* /usr/local/bin/idle* /usr/local/bin/pydoc*"
ARG TRIMMED_STDLIB="ensurepip lib2to3 pydoc_data tkinter idlelib turtledemo test site-packages/pip site-packages/pip-*"
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy >/dev/null \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
    && find /usr/share/doc -type f ! -name copyright -delete && rm -rf /usr/share/man/* \
    && stdlib=$(python3 -c 'import sysconfig; print(sysconfig.get_path("stdlib"))') \
    && for part in $TRIMMED_STDLIB; do rm -rf "${stdlib:?}/"$part; done && rm -rf $TRIMMED \
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

# The image is the runtime stage's filesystem as one layer: a file deleted in a later layer is only hidden and still
# counted (and shipped), so the trim above would save nothing on top of the base's own layers.
FROM scratch
COPY --from=runtime / /
ENV LANG=C.UTF-8 \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
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
