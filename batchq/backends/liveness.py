"""Is a worker alive? A lock its database session holds for as long as it lives (MySQL GET_LOCK,
PostgreSQL advisory lock); a lease it renews (`?liveness=lease`: clusters and poolers, where a
session's lock is not seen everywhere or the session is not the worker's own); or, on SQLite,
its process on this host. A sweep asks one question whichever the worker holds: lock or lease.

A worker takes its lock on every connection it opens, before any statement runs, and keeps its
session busy with a heartbeat during a job; a sweep asks whether the lock of a claim's
``locked_by`` is still held. A session the server still keeps after the worker lost it (a
ghost) is ended: by the worker itself when it reconnects (holding a handover lock, which sweeps
count as a sign of life too, until it has its own lock back), by a sweep on request.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import BackendError, BackendUnavailable

log = logging.getLogger("batchq.backend")

# After ending its own ghost session, how long a worker waits for the server to free its lock.
GHOST_END_WAIT_SECONDS = 5.0
# An expired lease is kept this long (explain and the dashboard show when it ran out), then pruned.
LEASE_KEPT_SECONDS = 3600.0


class _Lock(Protocol):
    def acquire(self, blocking: bool = ..., timeout: float = ...) -> bool: ...
    def release(self) -> None: ...


class Session(Protocol):
    """What a liveness needs of its backend (batchq.backends.base.Backend is one): the session
    and its statements. Named here so that liveness, below base, does not import it."""

    @property
    def conn(self) -> Any: ...
    @property
    def connected(self) -> bool: ...
    @property
    def session_lock(self) -> _Lock: ...
    def execute(self, name: str, params: Any = None, conn: Any = None) -> int: ...
    def fetchone(self, name: str, params: Any = None, conn: Any = None) -> Any: ...
    def liveness_held(self, params: dict[str, Any]) -> bool: ...
    def aside(self) -> Session: ...
    def close(self) -> None: ...


class LivenessHeld(BackendUnavailable):
    """Another session holds this worker's liveness lock (its old session has not ended yet)."""


class Liveness:
    """A worker's sign of life on a server: a lock held by its session, named after the worker.

    ``lock_params`` gives the parameters naming a worker's lock in the ``liveness_*`` queries
    (a GET_LOCK name on MySQL, an advisory lock key on PostgreSQL).
    """

    def __init__(self, backend: Session, lock_params: Callable[[str], dict[str, Any]]) -> None:
        self.backend = backend
        self.lock_params = lock_params
        self.worker: str | None = None  # set by hold(): re-taken on every connect
        self._own_sessions: set[int] = set()  # server sessions that have held our lock

    def hold(self, worker: str) -> None:
        """Show ``worker`` alive for as long as its connection lives, on every connection it opens."""
        self.worker = worker
        try:
            if self.backend.connected:
                self.on_connect()
            else:
                self.backend.conn  # noqa: B018 - connect now, which calls on_connect
        except BaseException:
            self.worker = None
            raise

    def on_connect(self) -> None:
        """Run on a new connection of a worker, before anything else: take its lock again."""
        if self.worker is not None:
            self._keep_session_open()
            self._take(self.worker)

    def is_alive(self, worker: str) -> bool | None:
        """Is the worker that wrote ``locked_by = worker`` alive? (None: cannot be told.) Its
        lock held, or its lease not expired: one answer whichever kind the worker holds."""
        return self.backend.liveness_held({**self.lock_params(worker), "worker": worker})

    beat_seconds = float("inf")  # how often the heartbeat must beat for this kind of liveness

    def renew_if_due(self) -> None:
        """Between jobs: nothing to renew, the session holds the lock."""

    def release(self) -> None:
        """On a worker's way out: nothing, closing the session frees the lock."""

    def prune(self) -> None:
        """Drop the leases of workers that died long ago (gc-processing)."""
        self.backend.execute("leases_prune", {"older_than": LEASE_KEPT_SECONDS})

    def describe(self) -> str:
        return "liveness: a lock held by the worker's session (gc-processing sees a crash at once)"

    def ghost_session(self, worker: str, idle_after: float) -> tuple[int, float] | None:
        """The session holding the worker's lock, and its idle seconds, if it has sat idle for
        more than ``idle_after`` seconds: a working worker's heartbeat never lets it, so its
        worker is gone and the server has not noticed. None otherwise, or if it cannot be seen."""
        params = {**self.lock_params(worker), "idle_after": idle_after}
        row = self.backend.fetchone("liveness_ghost", params)
        return (int(row["session"]), float(row["idle_seconds"])) if row else None

    def end_session(self, session: int) -> bool:
        """End a server session (a ghost holding a worker's lock); False if not permitted."""
        try:
            self.backend.execute("end_session", {"session": session})
        except BackendUnavailable:
            raise
        except BackendError as exc:
            log.info("cannot end session %d: %s", session, exc)
            return False
        return True

    def ping(self) -> None:
        """The heartbeat: keep the worker's session from sitting idle while a job runs.

        Skipped while the worker itself uses the connection. A lost session is re-opened at
        once, which re-takes the lock (ending our ghost session if the server kept it).
        """
        backend = self.backend
        if not backend.session_lock.acquire(blocking=False):
            return
        try:
            try:
                backend.fetchone("heartbeat")
            except BackendUnavailable as exc:
                log.warning("database connection lost during a job (%s); reconnecting", exc)
                backend.fetchone("heartbeat")  # connects and takes the liveness lock again
        except BackendError as exc:
            log.warning("heartbeat failed (%s); retrying at the next beat", exc)
        finally:
            backend.session_lock.release()

    def _keep_session_open(self) -> None:
        """Raise the server's idle limit for the worker's session, where the server lets us.

        Only the worker's session: a job may leave it idle for hours. Where a server or proxy
        still cuts idle sessions, the worker's heartbeat (ping) keeps it busy.
        """
        try:
            self.backend.execute("keep_session_open")
        except BackendUnavailable:
            raise
        except BackendError as exc:
            log.info("cannot raise this session's idle limit (%s); the heartbeat keeps it busy", exc)

    def _take(self, worker: str) -> None:
        """Take the worker's lock on the current connection, or raise LivenessHeld.

        The name is unique to this process, so a session holding it is one this worker opened
        before: lost on our side (a middlebox dropped the connection) but not on the server's,
        a ghost. We end it (MySQL KILL, PostgreSQL pg_terminate_backend) and take the lock.
        """
        if self._try_take(worker):
            return
        holder = self.backend.fetchone("liveness_holder", self.lock_params(worker))
        session = holder["session"] if holder else None
        if session is None:
            if self._try_take(worker):  # freed meanwhile
                return
        elif int(session) in self._own_sessions:
            self._end_ghost(worker, int(session))
            return
        raise LivenessHeld(f"worker name {worker!r} is already held by a live session")

    def _try_take(self, worker: str) -> bool:
        row = self.backend.fetchone("liveness_lock", self.lock_params(worker))
        if not row or not row["acquired"]:
            return False
        self._own_sessions.add(int(row["session"]))
        return True

    def _end_ghost(self, worker: str, session: int) -> None:
        """End our own previous session, which still holds the lock, and take the lock.

        The ghost frees the lock before our wait for it can be queued; the handover lock,
        held meanwhile, keeps a sweep from seeing the worker dead in that gap."""
        log.warning(
            "worker %s: its previous database session %d still holds its lock; ending it", worker, session
        )
        params = {**self.lock_params(worker), "wait": GHOST_END_WAIT_SECONDS}
        handover = self.backend.fetchone("liveness_handover_lock", params)
        try:
            self._end_then_take(worker, session, params)
        finally:
            if handover and handover["acquired"]:
                self.backend.fetchone("liveness_handover_unlock", params)

    def _end_then_take(self, worker: str, session: int, params: dict[str, Any]) -> None:
        try:
            self.backend.execute("end_session", {"session": session})
        except BackendUnavailable:
            raise
        except BackendError as exc:
            raise LivenessHeld(
                f"worker name {worker!r} is held by this worker's previous session {session}, "
                f"which could not be ended ({exc}); the server frees it once it notices the "
                "connection is gone"
            ) from None
        try:
            row = self.backend.fetchone("liveness_lock_wait", params)
        except BackendUnavailable:
            raise
        except BackendError:
            row = None  # PostgreSQL: lock_timeout ran out
        if not row or not row["acquired"]:
            raise LivenessHeld(f"worker name {worker!r} is still held by session {session} after ending it")
        self._own_sessions.add(int(row["session"]))


class LeaseLiveness(Liveness):
    """A worker's sign of life as a row: a lease on the server's clock that the worker renews every
    third of ``ttl``, between jobs and, from the heartbeat, during one. For clusters and poolers,
    where a session's lock is not seen by every session (Galera) or a session is not the worker's
    own (PgBouncer in transaction mode). A worker that dies is seen dead once its lease expires.

    During a job the heartbeat renews the lease for as long as the job may run: up to its timeout
    and grace, past which the watchdog ends the process (and so the renewal); a job without a
    timeout keeps its lease while it runs, as a session keeps its lock.
    """

    def __init__(self, backend: Session, lock_params: Callable[[str], dict[str, Any]], ttl: float) -> None:
        super().__init__(backend, lock_params)
        self.ttl = ttl
        self.beat_seconds = ttl / 3
        self._renew_at = 0.0  # monotonic
        self._aside: Session | None = None  # the heartbeat's own connection (_renew_aside)

    def on_connect(self) -> None:
        """A new session holds nothing: the lease is the row, renewed on the new connection."""
        if self.worker is not None:
            self._renew()

    def renew_if_due(self) -> None:
        if self.worker is not None and time.monotonic() >= self._renew_at:
            self._renew()

    def ping(self) -> None:
        """The heartbeat during a job: renew the lease; while the worker uses its connection,
        and the renewal is due, on a connection of the heartbeat's own (a transactional job's
        transaction holds the worker's for as long as its task runs: batchq.job_transaction)."""
        backend = self.backend
        if self.worker is None:
            return
        if not backend.session_lock.acquire(blocking=False):
            if time.monotonic() >= self._renew_at:
                self._renew_aside()
            return
        try:
            self._renew()
        except BackendError as exc:  # a lost connection too: the worker reconnects between jobs
            log.warning("lease renewal failed (%s); retrying at the next beat", exc)
        finally:
            backend.session_lock.release()

    def _renew_aside(self) -> None:
        """The lease renewed on the heartbeat's own connection, opened on first need."""
        try:
            if self._aside is None:
                self._aside = self.backend.aside()
            self._renew(self._aside)
        except BackendError as exc:
            log.warning("lease renewal failed (%s); retrying at the next beat", exc)

    def release(self) -> None:
        aside, self._aside = self._aside, None
        if aside is not None:
            aside.close()
        if self.worker is not None:
            worker, self.worker = self.worker, None
            self.backend.execute("lease_drop", {"worker": worker})

    def ghost_session(self, worker: str, idle_after: float) -> tuple[int, float] | None:
        return None  # a lease is no session: nothing lingers past its expiry

    def end_session(self, session: int) -> bool:
        return False

    def describe(self) -> str:
        return (
            f"liveness: a lease of {self.ttl:g} s the worker renews (gc-processing sees a crash "
            "once the lease expires)"
        )

    def _renew(self, session: Session | None = None) -> None:
        assert self.worker is not None
        (session or self.backend).execute("lease_renew", {"worker": self.worker, "ttl": self.ttl})
        self._renew_at = time.monotonic() + self.beat_seconds


class ProcessLiveness(Liveness):
    """SQLite: no server sessions; a worker is alive while its process is (told on its own host)."""

    def __init__(self, backend: Session) -> None:
        super().__init__(backend, lambda worker: {})

    def on_connect(self) -> None:
        """Nothing to hold: the process is the sign of life."""

    def is_alive(self, worker: str) -> bool | None:
        host, pid = worker_host_and_pid(worker)
        if host != socket.gethostname() or pid is None:
            return None  # another host's process: cannot be told from here
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def ghost_session(self, worker: str, idle_after: float) -> tuple[int, float] | None:
        return None  # no sessions: a worker is its process

    def end_session(self, session: int) -> bool:
        return False

    def ping(self) -> None:
        """No session to keep open."""

    def prune(self) -> None:
        """No leases on SQLite."""

    def describe(self) -> str:
        return "liveness: the worker's process, told on its own host"


def owner_name(random_bytes: int = 4) -> str:
    """A worker's name (what a claim writes into locked_by, and what its liveness lock is named
    after), or a lock holder's: host:pid:random. The random part tells apart processes that share
    a host name and a pid (containers with the same hostname, each running batchq as PID 1)."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(random_bytes).hex()}"


_WORKER_NAME = re.compile(r"(?P<host>.*?):(?P<pid>[0-9]+)(?::[0-9a-f]{8})?")


def worker_host_and_pid(worker: str) -> tuple[str, int | None]:
    """Host and pid of a worker name: host:pid:random, or host:pid as older versions wrote."""
    match = _WORKER_NAME.fullmatch(worker)
    if match is None:
        return "", None
    return match["host"], int(match["pid"])
