"""The import folder: the only part of the filesystem the viewer lists, and the check that a requested path
stays inside it (after resolving symlinks) and is an mbox file."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path, PurePosixPath

from shared.errors import ErrorKind
from shared.mbox_format import sniff_mbox
from viewer.errors import ApiError
from viewer.settings import ViewerSettings

# An unzipped Takeout nests its file as `Takeout/Mail/All mail Including Spam and Trash.mbox`.
MAX_DEPTH = 4
MAX_FILES = 500


@dataclass(frozen=True, slots=True)
class ImportFile:
    path: str  # relative to the import folder, with `/` separators
    size: int
    mtime_unix: int


def list_mbox_files(import_dir: Path) -> list[ImportFile]:
    """`.mbox` files (any case) under the folder, a few levels deep, without following directory symlinks."""
    return sorted(islice(_mbox_files(import_dir), MAX_FILES), key=lambda f: f.path.lower())


def _mbox_files(import_dir: Path) -> Iterator[ImportFile]:
    root = import_dir.absolute()
    for current, dirs, files in os.walk(root, followlinks=False):  # nothing when the folder is missing
        depth = len(Path(current).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < MAX_DEPTH else []
        for name in sorted(files):
            if not name.lower().endswith(".mbox") or name.startswith("."):
                continue
            full = Path(current) / name
            try:
                resolve_import(import_dir, str(full.relative_to(root)), sniff=False)
                info = full.stat()
            except (ApiError, OSError):
                continue
            yield ImportFile(full.relative_to(root).as_posix(), info.st_size, int(info.st_mtime))


def resolve_import(import_dir: Path, relative: str, *, sniff: bool = True) -> str:
    """The real path of `relative` relative to the real folder, or `ApiError(422, "bad_path")`: the ingester is
    handed what was checked, never a name a link swapped in later could redirect (it refuses links itself, too)."""
    if not relative or "\x00" in relative or Path(relative).is_absolute():
        raise ApiError(422, ErrorKind.BAD_PATH, "give a path relative to the import folder, as listed by /api/imports")
    try:
        root = import_dir.resolve(strict=True)
    except OSError:
        raise ApiError(
            422, ErrorKind.BAD_PATH, "the import folder does not exist; create it and put the .mbox file in it"
        ) from None
    try:
        target = (root / relative).resolve(strict=True)
    except (OSError, RuntimeError):
        raise ApiError(422, ErrorKind.BAD_PATH, "no such file in the import folder") from None
    if not target.is_relative_to(root):
        raise ApiError(422, ErrorKind.BAD_PATH, "that path leads outside the import folder")
    info = target.stat()
    if not stat.S_ISREG(info.st_mode):
        raise ApiError(422, ErrorKind.BAD_PATH, "not a regular file; pick the .mbox file itself")
    if sniff:
        try:
            with target.open("rb") as handle:
                sniffed = sniff_mbox(handle)
        except OSError:
            raise ApiError(422, ErrorKind.BAD_PATH, "the file cannot be read by the viewer") from None
        if sniffed.problem is not None:
            raise ApiError(422, ErrorKind.BAD_PATH, f"not an mbox file ({sniffed.reason})")
    return target.relative_to(root).as_posix()


def relative_to_import_dir(settings: ViewerSettings, path: str) -> str | None:
    """`path` (as recorded on a run row) relative to the import folder, or None when it lies outside.

    Under Docker the runner records the host's path under the folder as `.env` names it (`./imports/…` by default),
    the same words the viewer is given as `host_import_dir`; it cannot be resolved in this container, so both are
    normalised (`./imports` and `imports/` are one folder) and compared component by component, never as text.
    """
    recorded = PurePosixPath(os.path.normpath(path))
    host = PurePosixPath(os.path.normpath(settings.host_import_dir)) if settings.host_import_dir else None
    if host is not None and recorded.is_relative_to(host) and ".." not in recorded.parts:
        inside = recorded.relative_to(host)
        return inside.as_posix() if inside.parts else None
    try:
        root = settings.import_dir.resolve(strict=True)
        target = Path(path).resolve()
    except (OSError, RuntimeError):
        return None
    return target.relative_to(root).as_posix() if target.is_relative_to(root) else None
