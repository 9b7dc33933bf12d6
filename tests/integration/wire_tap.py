"""TcpTap: a loopback TCP relay recording every byte it forwards (a capture without tcpdump)."""

from __future__ import annotations

import select
import socket
import threading


class TcpTap:
    """A loopback TCP relay that records every byte it forwards (the capture): clients connect to
    :attr:`port`, bytes go to ``target_port`` and back unchanged."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.captured = bytearray()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._sockets: list[socket.socket] = [self._listener]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        pairs: dict[socket.socket, socket.socket] = {}
        while not self._stop.is_set():
            readable, _, _ = select.select([self._listener, *pairs], [], [], 0.05)
            for sock in readable:
                if sock is self._listener:
                    client, _ = self._listener.accept()
                    upstream = socket.create_connection(("127.0.0.1", self.target_port))
                    pairs[client], pairs[upstream] = upstream, client
                    self._sockets += [client, upstream]
                    continue
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    other = pairs.pop(sock)
                    pairs.pop(other, None)
                    continue
                self.captured += data
                pairs[sock].sendall(data)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock in self._sockets:
            sock.close()
