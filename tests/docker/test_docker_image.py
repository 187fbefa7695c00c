"""The built image runs what we ship from sourceless bytecode, without the packages the Dockerfile prunes.

Each check runs inside the real image (`--network none`, read-only root, a private /tmp) the way the stack runs it:
every module imported, a scan of a fake Gmail and an mbox import through the real CLI, the viewer answering.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import REPO_ROOT
from tests.docker.dockerenv import docker, ensure_image, python_image

pytestmark = pytest.mark.docker

# What the Dockerfile's PRUNED list removes, by import name and by distribution name.
PRUNED_MODULES = (
    "google.protobuf", "google.api", "google.rpc", "google.type", "google.longrunning", "proto", "cffi",
    "pycparser", "pygments", "markdown_it", "greenlet", "pyasn1", "sqlalchemy.ext.asyncio", "sqlalchemy.ext.mypy",
    "sqlalchemy.testing", "pydantic.mypy",
)  # fmt: skip
PRUNED_DISTRIBUTIONS = ("protobuf", "googleapis-common-protos", "proto-plus", "cffi", "pycparser", "greenlet")
# The compiled extensions that stay: cryptography's binding (google-auth's signing) and the `_cffi_backend` it
# loads, pydantic's core, SQLAlchemy's Cython speed-ups, charset-normalizer's (requests).
EXTENSIONS = (
    "cryptography.hazmat.bindings._rust", "_cffi_backend", "pydantic_core._pydantic_core", "charset_normalizer.md",
    "sqlalchemy.cyextension.collections", "sqlalchemy.cyextension.immutabledict",
    "sqlalchemy.cyextension.processors", "sqlalchemy.cyextension.resultproxy", "sqlalchemy.cyextension.util",
)  # fmt: skip
# What the Dockerfile's TRIMMED lists remove from the base: stdlib parts by import name, files by glob.
TRIMMED_MODULES = ("ensurepip", "lib2to3", "pydoc_data", "tkinter", "idlelib", "pip")
TRIMMED_FILES = ("/usr/lib/*/gconv", "/usr/share/python-wheels", "/usr/local/bin/pip*")
# The console scripts left in the venv's bin/ (fastapi's needs fastapi-cli, not installed; publicsuffixlist's
# downloads), run as a user would.
SCRIPTS = ("uvicorn", "dotenv", "normalizer", "idna", "google-oauthlib-tool")
# The Dockerfile's KEEP_SOURCE: anyio's lazy importer reads these; without them it imports all of anyio at once.
KEPT_SOURCES = ["anyio/__init__.py", "anyio/__pycache__", "anyio/abc/__init__.py", "anyio/abc/__pycache__"]

# Every module of the three packages, then the parts of Google's clients a scan reaches only at run time
# (consent, token refresh, the API client, service-account signing that google-auth imports with them); the
# extensions; then what the venv holds: no sources but KEPT_SOURCES, no pruned package, every shared object stripped.
_INSPECT = """
import glob, importlib, importlib.metadata, importlib.util, json, os, pkgutil, shutil, struct, sys, sysconfig
import ingester, shared, viewer
for package in (ingester, shared, viewer):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
for name in ("google_auth_oauthlib.flow", "google.oauth2.credentials", "google.auth.transport.requests",
             "google_auth_httplib2", "googleapiclient.discovery", "google.auth.crypt", "rich.progress", *EXTENSIONS):
    importlib.import_module(name)
from sqlalchemy.util import has_compiled_ext
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
key.public_key().verify(key.sign(b"x", padding.PKCS1v15(), hashes.SHA256()), b"x", padding.PKCS1v15(), hashes.SHA256())

def sections(path):
    # ELF64 little-endian: e_shoff at 0x28; e_shentsize, e_shnum, e_shstrndx at 0x3A; a header's name and offset.
    data = open(path, "rb").read()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    size, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    header = lambda i: struct.unpack_from("<I4xQQQ", data, shoff + i * size)
    base = header(names_index)[3]
    return {data[base + n : data.index(b"\\0", base + n)].decode() for n, *_ in map(header, range(count))}

site = sysconfig.get_paths()["purelib"]
files = glob.glob(site + "/**", recursive=True)
missing = []
for name in PRUNED_DISTRIBUTIONS:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        missing.append(name)
print(json.dumps({
    "modules": len(sys.modules),
    "compiled_sqlalchemy": has_compiled_ext(),
    "sqlalchemy_from": sys.modules["sqlalchemy"].__file__,
    "ours_from": sys.modules["ingester.cli"].__file__,
    "sources": sorted(os.path.relpath(f, site) for f in files
                      if f.endswith((".py", ".pyi")) or os.path.basename(f) == "__pycache__"),
    "anyio_lazy": "anyio.to_interpreter" not in sys.modules,
    "pyc": sum(f.endswith(".pyc") for f in files),
    "pruned_found": [name for name in PRUNED_MODULES if importlib.util.find_spec(name) is not None],
    "distributions_missing": missing,
    "unstripped": [f for f in files if f.endswith(".so") and {".symtab", ".debug_info"} & sections(f)],
    "strip": shutil.which("strip"),
    "trimmed_found": [name for name in TRIMMED_MODULES if importlib.util.find_spec(name) is not None]
    + [path for pattern in TRIMMED_FILES for path in glob.glob(pattern)],
}))
"""

# A scan of a fake Gmail (the tests' fake, mounted read-only) through the real CLI: Google's OAuth and API clients
# build the Gmail service from the packaged discovery document and batch over loopback. Then an mbox import (worker
# processes), both databases read back through our reader engine, and the viewer serving the scanned one.
_RUN = """
import json, os, subprocess, sys, time, urllib.request
from pathlib import Path
from sqlalchemy import select
from shared.db import reader_engine
from shared.schema.models import ingest_runs, senders
from tests.fakes.google import FakeGoogle
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.mailbox import Mailbox
from tests.support.factories import mbox_bytes

tmp = Path("/tmp")

def cli(*args, **env):
    done = subprocess.run([sys.executable, "-m", "ingester", *args], capture_output=True, text=True, timeout=120,
                          env=os.environ | env, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])

def counts(db):
    engine = reader_engine(db)
    try:
        with engine.connect() as conn:
            states = set(conn.execute(select(ingest_runs.c.state)).scalars())
            rows = conn.execute(select(senders.c.sender, senders.c.mails_sent).where(senders.c.mails_sent > 0))
            found = {sender: count for sender, count in rows}
    finally:
        engine.dispose()
    assert states == {"done"}, states
    return found

google = FakeGoogle(Mailbox.generate(60, seed=5))
with FakeGoogleServer(google) as server:
    (tmp / "credentials.json").write_text(json.dumps(google.client_config()))
    (tmp / "tokens.json").write_text(json.dumps(google.authorized_user_info()))
    cli("scan", "--quiet", GMAIL_STATS_API_ENDPOINT=server.base_url, GMAIL_STATS_DB="/tmp/scan.db",
        GMAIL_STATS_CREDENTIALS="/tmp/credentials.json", GMAIL_STATS_TOKENS="/tmp/tokens.json",
        OAUTHLIB_INSECURE_TRANSPORT="1", GMAIL_STATS_QUOTA_UNITS_PER_SEC="1000000")
expected = google.mailbox.expected_counts()
assert counts(tmp / "scan.db") == expected

(tmp / "small.mbox").write_bytes(mbox_bytes(40, senders=7))
cli("import", "--quiet", "/tmp/small.mbox", GMAIL_STATS_DB="/tmp/import.db", GMAIL_STATS_PARSE_WORKERS="2")
assert sum(counts(tmp / "import.db").values()) == 40

with open("/tmp/viewer.log", "wb") as log:
    viewer = subprocess.Popen([sys.executable, "-m", "viewer", "--db", "/tmp/scan.db", "--port", "7878"],
                              stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
try:
    for _ in range(300):
        try:
            with urllib.request.urlopen("http://127.0.0.1:7878/api/senders", timeout=5) as answer:
                page = json.load(answer)
            break
        except OSError:
            assert viewer.poll() is None, open("/tmp/viewer.log").read()
            time.sleep(0.1)
    else:
        raise AssertionError(open("/tmp/viewer.log").read())
finally:
    viewer.terminate()
    viewer.wait(20)
assert page["total_messages"] == sum(expected.values()), page
assert {row["sender"] for row in page["senders"]} <= set(expected), page
print("ran", len(expected), "senders")
"""


def in_image(*args: str, tests: bool = False, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """`docker run` of the image as the stack runs it: no network, read-only root, a private /tmp, uid 10001."""
    mounts = ["--volume", f"{REPO_ROOT / 'tests'}:/app/tests:ro"] if tests else []
    return docker(
        "run", "--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp:rw,nosuid,nodev,size=64m", *mounts,
        *args, timeout=timeout,
    )  # fmt: skip


def _layers(image: str) -> set[str]:
    return set(docker("image", "inspect", "--format", '{{join .RootFS.Layers " "}}', image).stdout.split())


def _inspect_script() -> str:
    names = {
        "EXTENSIONS": EXTENSIONS,
        "PRUNED_MODULES": PRUNED_MODULES,
        "PRUNED_DISTRIBUTIONS": PRUNED_DISTRIBUTIONS,
        "TRIMMED_MODULES": TRIMMED_MODULES,
        "TRIMMED_FILES": TRIMMED_FILES,
    }
    return "".join(f"{name} = {values!r}\n" for name, values in names.items()) + _INSPECT


def test_every_module_imports_from_sourceless_bytecode_without_the_pruned_packages() -> None:
    image = ensure_image()
    found = json.loads(in_image("--entrypoint", "python3", image, "-c", _inspect_script()).stdout)
    assert found["modules"] > 500
    assert found["compiled_sqlalchemy"] is True, "SQLAlchemy fell back to its pure-Python paths"
    # The venv holds bytecode only (`name.pyc` beside where `name.py` was); our own packages keep their sources.
    assert found["sqlalchemy_from"].endswith("/site-packages/sqlalchemy/__init__.pyc")
    assert found["ours_from"] == "/app/ingester/cli.py"
    assert found["sources"] == KEPT_SOURCES
    assert found["anyio_lazy"] is True, "anyio imported all its submodules: its lazy importer found no source"
    assert found["pyc"] > 1000
    assert found["pruned_found"] == []
    assert found["distributions_missing"] == list(PRUNED_DISTRIBUTIONS)
    assert found["unstripped"] == []
    assert found["strip"] is None, "binutils belongs to the build stage only"
    assert found["trimmed_found"] == []
    # None of the base's layers: what the runtime stage deleted from the base is gone, not hidden under a later layer.
    assert not _layers(image) & _layers(python_image())


def test_the_entry_points_and_the_venv_scripts_start() -> None:
    image = ensure_image()
    result = in_image(image)  # the image's own command: the ingester's --help
    assert "usage: gmail-stats" in result.stdout
    viewer = in_image("--entrypoint", "python3", image, "-m", "viewer", "--help")
    assert "usage: gmail-stats-viewer" in viewer.stdout
    for script in SCRIPTS:
        assert in_image("--entrypoint", script, image, "--help").stdout, script


def test_a_scan_an_import_and_the_viewer_run_in_the_image() -> None:
    image = ensure_image()
    result = in_image("--entrypoint", "python3", image, "-c", _RUN, tests=True, timeout=300)
    assert result.stdout.startswith("ran "), result.stdout + result.stderr
