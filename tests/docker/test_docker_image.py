"""The built image runs what we ship without the dependencies the Dockerfile prunes (its `PRUNED` list)."""

from __future__ import annotations

import pytest

from tests.docker.dockerenv import docker, ensure_image

pytestmark = pytest.mark.docker

# Every module of the three packages, then the parts of Google's clients a scan reaches only at run time
# (consent, token refresh, the API client, service-account signing that google-auth imports with them).
_IMPORT_EVERYTHING = """
import importlib, pkgutil, sys
import ingester, shared, viewer
for package in (ingester, shared, viewer):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
for name in ("google_auth_oauthlib.flow", "google.oauth2.credentials", "google.auth.transport.requests",
             "google_auth_httplib2", "googleapiclient.discovery", "google.auth.crypt", "rich.progress"):
    importlib.import_module(name)
import sqlalchemy
with sqlalchemy.create_engine("sqlite://").connect() as conn:
    conn.exec_driver_sql("SELECT 1")
print("imported", len(sys.modules))
"""


def test_every_module_imports_in_the_image_without_the_pruned_packages() -> None:
    image = ensure_image()
    result = docker("run", "--rm", "--network", "none", "--entrypoint", "python3", image, "-c", _IMPORT_EVERYTHING)
    assert result.stdout.startswith("imported ")
    gone = docker("run", "--rm", "--entrypoint", "sh", image, "-c", "ls /opt/venv/lib/python3*/site-packages")
    assert not {"pygments", "greenlet", "pyasn1", "markdown_it"} & set(gone.stdout.split())
