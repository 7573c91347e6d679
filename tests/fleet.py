"""A fleet of databases for the all-databases tests: live databases on the session's server, a refusing host (a
closed port) and a hung host (a socket that accepts and never answers, so only a connect deadline ends the wait)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
from pathlib import Path

import psycopg

from tests.test_databases import write_config
from tests.test_keys import insert_key

LIVE = 4


class HungHost:
    """A TCP server that accepts every connection, reads its startup packet and never sends a byte: a host that
    hangs. ``asked_by(name)``: how many connections came from sessions of that application_name."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted: list[tuple[socket.socket, bytes]] = []
        self._thread = threading.Thread(target=self._accept, name="hung-host", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            conn.settimeout(0.5)
            try:
                startup = conn.recv(4096)  # sslmode=disable: the startup packet, which names the application
            except OSError:
                startup = b""
            self.accepted.append((conn, startup))  # held open, never answered

    def asked_by(self, application_name: str) -> int:
        return sum(application_name.encode() + b"\0" in startup for _, startup in self.accepted)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() under way: close() alone does not
        self.listener.close()
        for conn, _ in self.accepted:
            conn.close()
        self._thread.join(5)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket closes


def make_fleet(template: str, clone_of, directory: Path, hung_host: HungHost) -> dict:
    """A config file: the hung host first (so one thread alone is held up by it), the refusing host, then LIVE
    clones of ``template``, the i-th with i + 1 stuck keys."""
    # the web pool of each database (not this test's subject) connects without a deadline unless its URL says one
    urls = {
        "hung": f"postgresql://idemdash@127.0.0.1:{hung_host.port}/hung?connect_timeout=2&sslmode=disable",
        "refusing": f"postgresql://idemdash@127.0.0.1:{closed_port()}/gone",
    }
    for i in range(LIVE):
        url = clone_of(template)
        with psycopg.connect(url, autocommit=True) as conn:
            for k in range(i + 1):
                insert_key(conn, "orders", f"k-{i}-{k}")
        urls[f"live{i}"] = url
    config = write_config(directory / "fleet.toml", {name: {"url": url} for name, url in urls.items()})
    return {"config": config, "urls": urls, "hung": hung_host}


def held_connections(pids: list[int], socket_dir: str) -> dict[int, int]:
    """Per process: its connections to the PostgreSQL listening on a Unix socket in ``socket_dir`` (the embedded
    server's). ``ss`` pairs each socket with its peer, so a client's socket is known by the server's end it is
    connected to (pg_stat_activity has no client pid for a Unix socket)."""
    listing = subprocess.run(["ss", "-xnH"], capture_output=True, text=True, check=True).stdout
    peer_of, server_ends = {}, set()
    for line in listing.splitlines():
        fields = line.split()  # netid state recv-q send-q local-address inode peer-address peer-inode
        if len(fields) < 8:
            continue
        local, inode, peer = fields[4], fields[5], fields[7]
        peer_of[inode] = peer
        if local.startswith(socket_dir.rstrip("/") + "/.s.PGSQL."):
            server_ends.add(inode)
    held = {}
    for pid in pids:
        inodes = []
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:  # closed meanwhile
                continue
            if target.startswith("socket:["):
                inodes.append(target[len("socket:[") : -1])
        held[pid] = sum(peer_of.get(inode) in server_ends for inode in inodes)
    return held
