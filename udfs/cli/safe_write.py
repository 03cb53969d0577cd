"""The one safe way Flopsheet writes a file (workbooks, reports, CSV, add-in files).

`safe_write(path, write, force=False)` calls `write(temporary_path)` beside the target and
renames the result into place, so an interrupted or failed run never leaves a half-written
file, never clobbers an existing one without `force`, and never leaves its temporary file
behind (not even on Ctrl-C). A new file gets the mode the umask allows (not the temporary
file's private 0600); a file replaced under `force` keeps its own mode. Every failure is a
`WriteError` with a sentence a user can act on; the CLI prints it and exits 2.

`check_targets(paths, force)` runs the same checks up front, so a command fails before it
spends time building what it could not write. Anything at the path counts as existing, a
dangling symbolic link included. Standard library only.

A run killed outright (SIGKILL, power cut) cannot remove its temporary file, so each one is
named `.NAME.PID.XXXXXXXX.tmp`: the next write of NAME removes those whose process is gone
(or that are older than STALE_SECONDS, for names without a live-process check).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

_REASONS = {  # errno -> what the user should know
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder",
    errno.ENAMETOOLONG: "the name is too long",
}


STALE_SECONDS = 24 * 3600   # no write takes a day: an older temporary file is left over


class WriteError(Exception):
    """A file Flopsheet was asked to write cannot be written; the message says why."""


def _reason(exc: OSError) -> str:
    known = _REASONS.get(exc.errno) if exc.errno is not None else None
    return known or exc.strerror or type(exc).__name__


def umask() -> int:
    """The process umask (read without changing it where /proc allows)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)  # elsewhere: read it by setting it, then put it straight back
    os.umask(mask)
    return mask


def check_target(path: str | os.PathLike, force: bool = False) -> Path:
    """Raise WriteError unless `path` can be (over)written: not a folder, no clash without
    `force`, and a parent folder that exists (or can be made) and is writable."""
    path = Path(path)
    if path.is_dir():
        raise WriteError(f"cannot write {path}: it is a folder; give a file name")
    if os.path.lexists(path) and not force:    # lexists: a dangling link is something there too
        raise WriteError(f"{path} already exists; use --force to overwrite it")
    parent = _nearest_existing(path.parent)
    if not parent.is_dir():
        raise WriteError(f"cannot write {path}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        why = "the file system is read-only" if _read_only(parent) else "permission denied"
        raise WriteError(f"cannot write {path}: {why} in {parent}")
    return path


def check_targets(paths: Iterable[str | os.PathLike], force: bool = False) -> list[Path]:
    return [check_target(p, force) for p in paths]


def _nearest_existing(folder: Path) -> Path:
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise WriteError(f"cannot write {path}: a part of {path.parent} is a file, not a folder") from None
    except OSError as e:
        raise WriteError(f"cannot create the folder {path.parent}: {_reason(e)}") from None


def _final_mode(path: Path) -> int:
    """The existing file's permission bits, or what a new file gets under the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~umask()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, ValueError, OverflowError):  # someone else's process, or no way to ask: assume alive
        return True
    return True


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove the temporary files earlier killed writes of `path` left beside it."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(?:(\d+)\.)?[A-Za-z0-9_]{{8}}\.tmp")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if not match or not entry.is_file(follow_symlinks=False):
            continue
        try:
            old = time.time() - entry.stat(follow_symlinks=False).st_mtime > STALE_SECONDS
            if old or (match.group(1) and os.name == "posix" and not _alive(int(match.group(1)))):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:  # gone meanwhile, or not ours to remove: not this write's problem
            pass
    return removed


def safe_write(path: str | os.PathLike, write: Callable[[str], None], force: bool = False) -> Path:
    """Call `write(temporary_path)` beside `path`, then rename it over `path`."""
    path = check_target(path, force)
    _make_parent(path)
    remove_stale_temporaries(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise WriteError(f"cannot write {path}: {_reason(e)}") from None
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, _final_mode(path))
        os.replace(tmp, path)
    except OSError as e:
        raise WriteError(f"cannot write {path}: {_reason(e)}") from None
    finally:  # on success tmp is gone (renamed); on any failure, Ctrl-C included, remove it
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return path


def safe_write_text(path: str | os.PathLike, text: str, force: bool = False, encoding: str = "utf-8") -> Path:
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding=encoding, newline="") as f:
            f.write(text)
    return safe_write(path, write, force)
