"""The I/O-bound jobs of bench/io_jobs.py (BATCHQ_TASK_MODULES=io_tasks, PYTHONPATH=bench).

Imports nothing but the standard library, so that a `batchq run` that loads it holds no more
than batchq and its driver (bench/io_peers.py wraps these bodies for huey, procrastinate and
pgqueuer). The HTTP jobs call $BENCH_IO_URL (http://127.0.0.1:PORT/, the server io_jobs.py
starts in its own process: each request's handler sleeps 20 ms).

  sleep_10ms        time.sleep(0.01)
  http_get          GET $BENCH_IO_URL with http.client: one connection per job (HTTP/1.0, the
                    server closes it), the body read, status 200 checked
  async_sleep_10ms  async def: await asyncio.sleep(0.01)
  async_http_get    async def: the same GET on asyncio.open_connection (a request line, a Host
                    header, read to EOF, status 200 checked). A minimal client written out here
                    rather than a library: none of the peers brings an async HTTP client, and
                    one made per job (as a job run with asyncio.run must, its loop being new)
                    would time the client's own set-up (httpx builds an SSL context per
                    AsyncClient) more than the queue's.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import time
from urllib.parse import urlsplit

SLEEP_SECONDS = 0.01
SERVER_SLEEP_SECONDS = 0.02  # what io_jobs.py's handler sleeps per request


def _server() -> tuple[str, int]:
    parts = urlsplit(os.environ["BENCH_IO_URL"])
    return parts.hostname or "127.0.0.1", parts.port or 80


def sleep_10ms(payload=None):
    time.sleep(SLEEP_SECONDS)


def http_get(payload=None):
    host, port = _server()
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request("GET", "/")
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"GET / answered {response.status}")
    finally:
        conn.close()


async def async_sleep_10ms(payload=None):
    await asyncio.sleep(SLEEP_SECONDS)


async def async_http_get(payload=None):
    host, port = _server()
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(f"GET / HTTP/1.0\r\nHost: {host}:{port}\r\n\r\n".encode())
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 30)  # to EOF: HTTP/1.0, the server closes
    finally:
        writer.close()
        await writer.wait_closed()
    status = answer.split(b"\r\n", 1)[0]
    if b" 200 " not in status:
        raise RuntimeError(f"GET / answered {status!r}")


SYNC = ("sleep_10ms", "http_get")
ASYNC = ("async_sleep_10ms", "async_http_get")
SECONDS = {  # what one job waits at the least
    "sleep_10ms": SLEEP_SECONDS,
    "async_sleep_10ms": SLEEP_SECONDS,
    "http_get": SERVER_SLEEP_SECONDS,
    "async_http_get": SERVER_SLEEP_SECONDS,
}
