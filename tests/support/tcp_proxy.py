"""A small TCP proxy standing for a middlebox (NAT, load balancer) between workers and a server.

``drop()`` closes the client side of every connection and keeps the server side open, as a
middlebox that forgets a connection does: the server keeps the session, and its locks, while
the client sees its connection gone. ``idle_cut`` closes both sides of a connection that has
carried nothing for that many seconds, as a load balancer's idle timeout does. ``latency``
holds every chunk that many seconds before forwarding it, as a distant server's round trip does.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from types import TracebackType


class TcpProxy:
    def __init__(self, target_port: int, idle_cut: float | None = None, latency: float = 0.0) -> None:
        self.target = ("127.0.0.1", target_port)
        self.idle_cut = idle_cut
        self.latency = latency
        self.cuts = 0  # connections closed by idle_cut
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Condition()
        self._pumps: dict[int, int] = {}  # live pump thread id -> its generation
        self._generation = 0  # bumped by drop(): pumps of older generations stop forwarding
        self._ghosts: list[socket.socket] = []  # server sides kept open after a drop
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url_for(self, server_url: str) -> str:
        """``server_url`` with its host:port replaced by the proxy's."""
        scheme, rest = server_url.split("://", 1)
        userinfo, _, hostpath = rest.rpartition("@")
        path = hostpath.split("/", 1)[1]
        return f"{scheme}://{userinfo + '@' if userinfo else ''}127.0.0.1:{self.port}/{path}"

    def drop(self) -> None:
        """Forget every connection: close its client side, keep its server side open.

        Returns once every connection has been forgotten."""
        with self._lock:
            self._generation += 1
            self._lock.wait_for(lambda: not self._older_pumps())

    def _older_pumps(self) -> bool:
        return any(generation < self._generation for generation in self._pumps.values())

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            self._generation += 1
            ghosts, self._ghosts = self._ghosts, []
        for sock in ghosts:
            sock.close()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, server, self._generation), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket, generation: int) -> None:
        with self._lock:
            self._pumps[threading.get_ident()] = generation
        try:
            self._forward(client, server, generation)
        finally:
            with self._lock:
                del self._pumps[threading.get_ident()]
                self._lock.notify_all()

    def _forward(self, client: socket.socket, server: socket.socket, generation: int) -> None:
        last_traffic = time.monotonic()
        peers = {client: server, server: client}
        while True:
            if self._generation != generation:  # dropped (or the proxy closed)
                client.close()
                if self._closed:
                    server.close()
                else:
                    with self._lock:
                        self._ghosts.append(server)
                return
            if self.idle_cut is not None and time.monotonic() - last_traffic > self.idle_cut:
                self.cuts += 1
                break
            readable, _, _ = select.select([client, server], [], [], 0.02)
            if self._generation != generation:
                continue  # dropped while waiting: forward nothing more
            try:
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        raise ConnectionResetError
                    time.sleep(self.latency)
                    peers[sock].sendall(data)
                    last_traffic = time.monotonic()
            except OSError:
                break
        client.close()
        server.close()
