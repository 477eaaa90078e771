"""At most K `batchq run` processes per host and database: one flock()ed file per slot.

The kernel drops a flock when its process dies, however it dies, so a killed
worker never leaves a slot taken.

The files live in ``<base>/<key>/``, where the key is a hash of the database itself
(SQLite: the file's resolved absolute path; servers: dialect, host, port and database
name), not of the URL's text. The base is in a folder of this user's own, so that no
other local user can make it first (a world-writable /tmp lets them): the runtime folder
``$XDG_RUNTIME_DIR/batchq``, else ``~/.local/state/batchq-slots-<host>`` (``$XDG_STATE_HOME``;
the host in the name, as a home may be shared between hosts), else, when neither is usable,
``$TMPDIR/batchq-<uid>`` as before. The base and key folders must be private to this user:
another local user could otherwise hold every slot, or plant a symlink where a slot file
goes. Anything else is refused with one line.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import socket
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.config import DEFAULT_PORTS, DatabaseURL
from ..errors import BatchqError


class SlotFolderUnsafe(BatchqError):
    """The slot folder or a slot file is not this user's own: refused, never used."""


def database_key(url: DatabaseURL) -> str:
    """What identifies the database whatever the URL's spelling (user and options aside).

    The user is left out on purpose: the limit is per database, whoever connects to it.
    """
    if url.dialect == "sqlite":
        if url.database == ":memory:":
            return f"sqlite::memory:{os.getpid()}"  # private to this process
        return "sqlite:" + os.path.realpath(url.database)
    port = url.port or DEFAULT_PORTS[url.dialect]
    return f"{url.dialect}://{url.host.lower()}:{port}/{url.database}"


def slot_dir(url: DatabaseURL) -> Path:
    key = hashlib.sha1(database_key(url).encode()).hexdigest()[:16]
    return slot_base() / key


def slot_base() -> Path:
    """The folder of this user's slot folders: the first of the runtime folder, the state
    folder under the home, and the temp folder whose parent is this user's own."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and _owned_private(Path(runtime)):
        return Path(runtime) / "batchq"
    state = _state_home()
    if state is not None:
        return state / f"batchq-slots-{socket.gethostname()}"
    return Path(tempfile.gettempdir()) / f"batchq-{os.getuid()}"


def _state_home() -> Path | None:
    """$XDG_STATE_HOME (default ~/.local/state), made if missing; None if it is not usable
    (no home, a home not writable, or not this user's)."""
    configured = os.environ.get("XDG_STATE_HOME", "")
    try:
        home = Path.home()
        if not (os.path.isabs(configured) or home.is_dir()):
            return None  # a home that does not exist is not made
        path = Path(configured) if os.path.isabs(configured) else home / ".local" / "state"
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # RuntimeError: no home to expand ~ to
        return None
    return path if _owned_private(path) and os.access(path, os.W_OK | os.X_OK) else None


def _owned_private(path: Path) -> bool:
    """A directory of this user's that no one else can write into."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


@contextmanager
def host_slot(url: DatabaseURL, max_procs: int) -> Iterator[int | None]:
    """Yield the slot number taken, or None when all ``max_procs`` slots are busy."""
    folder = slot_dir(url)
    _private_folder(folder.parent)
    _private_folder(folder)
    for number in range(max_procs):
        fd = _open_slot_file(folder / f"slot-{number}.lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield number
        finally:
            os.close(fd)  # releases the lock
        return
    yield None


def _private_folder(path: Path) -> None:
    """Make ``path`` (mode 0700), or check that the existing one is this user's and nobody else's.

    A folder others can write into is refused: they could have planted slot files or links.
    """
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise SlotFolderUnsafe(f"cannot make slot folder {path}: {exc.strerror}") from None
    info = os.lstat(path)
    problem = None
    if not stat.S_ISDIR(info.st_mode):
        problem = "is not a directory" + (" (a symlink)" if stat.S_ISLNK(info.st_mode) else "")
    elif info.st_uid != os.getuid():
        problem = f"is owned by uid {info.st_uid}, not by this user (uid {os.getuid()})"
    elif info.st_mode & 0o022:
        problem = f"is writable by other users (mode {stat.S_IMODE(info.st_mode):04o}, not 0700)"
    elif info.st_mode & 0o077:
        os.chmod(path, 0o700)  # made 0755 by an older batchq: ours, and nobody else could write there
    if problem:
        raise SlotFolderUnsafe(
            f"slot folder {path} {problem}: refusing to use it; remove it, or set XDG_RUNTIME_DIR "
            "to a private folder"
        )


def _open_slot_file(path: Path) -> int:
    """Open (or create, 0600) a slot file, never following a symlink planted in its place."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        what = "is a symlink" if exc.errno == errno.ELOOP else f"cannot be opened ({exc.strerror})"
        raise SlotFolderUnsafe(f"slot file {path} {what}: refusing to use it; remove it") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        os.close(fd)
        raise SlotFolderUnsafe(
            f"slot file {path} is not a regular file of this user: refusing to use it; remove it"
        )
    return fd
