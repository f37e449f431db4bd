#!/usr/bin/env python3
"""What sockets that upgrade and never send `connection_init` cost the server.

Starts `serve --memory --api-key k` (credentials required, as the hostile case had it),
opens N WebSocket upgrades (graphql-transport-ws) that send nothing after the handshake, and
keeps them open. Prints how many were answered 101, how many the server had closed (a close
frame or the end of the stream) once all were open, and the server's resident memory before,
after, and at its peak (VmHWM). Then one client initialises and is acknowledged.

    python3 bench/bare_upgrades.py [--binary target/release/tablegraph] [--sockets 5000]
                                   [--port 18099] [--max-pending-sockets N]

Standard library only; it raises its own limit on open files to fit the sockets.
"""

import argparse
import base64
import os
import re
import resource
import select
import socket
import subprocess
import sys
import time


def rss_kb(pid, field):
    status = open(f"/proc/{pid}/status").read()
    return int(re.search(rf"{field}:\s+(\d+)", status).group(1))


def upgrade(port, key=None):
    """A socket upgraded to graphql-transport-ws; its 101 read, nothing sent after."""
    sock = socket.create_connection(("127.0.0.1", port))
    nonce = base64.b64encode(os.urandom(16)).decode()
    extra = f"x-api-key: {key}\r\n" if key else ""
    sock.sendall(
        (
            "GET /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n"
            f"{extra}\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return sock, head.split(b"\r\n", 1)[0].decode(errors="replace")


def closed_by_server(sock):
    """Whether the server has sent a close frame or ended the stream (without blocking)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    if not poller.poll(0):
        return False
    try:
        data = sock.recv(4096)
    except OSError:
        return True
    # A close frame starts with 0x88; an ended stream reads nothing.
    return not data or data[0] == 0x88


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="target/release/tablegraph")
    parser.add_argument("--sockets", type=int, default=5000)
    parser.add_argument("--port", type=int, default=18099)
    parser.add_argument("--max-pending-sockets", type=int)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, args.sockets * 2 + 1024)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    command = [args.binary, "serve", "--memory", "--listen", f"127.0.0.1:{args.port}",
               "--api-key", "k"]
    if args.max_pending_sockets:
        command += ["--max-pending-sockets", str(args.max_pending_sockets)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", args.port)).close()
                break
            except OSError:
                time.sleep(0.1)
        before = rss_kb(server.pid, "VmRSS")
        sockets, answered = [], 0
        started = time.time()
        for _ in range(args.sockets):
            sock, status = upgrade(args.port)
            answered += " 101 " in f"{status} "
            sockets.append(sock)
        took = time.time() - started
        after = rss_kb(server.pid, "VmRSS")
        closed = sum(closed_by_server(sock) for sock in sockets)
        peak = rss_kb(server.pid, "VmHWM")
        client, status = upgrade(args.port, key="k")
        client.sendall(websocket_text('{"type":"connection_init","payload":{"x-api-key":"k"}}'))
        acked = b"connection_ack" in client.recv(4096)
        print(
            f"{args.sockets} bare upgrades in {took:.1f} s: {answered} answered 101, "
            f"{closed} closed by the server, {args.sockets - closed} held; "
            f"RSS {before // 1024} MB before, {after // 1024} MB after, peak {peak // 1024} MB; "
            f"a real client afterwards: {'acknowledged' if acked else 'NOT acknowledged'}"
        )
        for sock in sockets:
            sock.close()
    finally:
        server.terminate()
        server.wait()


def websocket_text(text):
    """One masked text frame, as a client sends it."""
    payload = text.encode()
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    assert len(payload) < 126
    return bytes([0x81, 0x80 | len(payload)]) + mask + masked


if __name__ == "__main__":
    sys.exit(main())
