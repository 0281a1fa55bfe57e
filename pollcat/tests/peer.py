#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""peer.py MODE PORTFILE [BYTES [DELAY]]: a TCP peer for pollcat's tests.

It listens on 127.0.0.1 (a free port, written to PORTFILE), accepts one
connection, and then:
  send-reset BYTES  sends BYTES bytes, waits half a second (pollcat reads
                    them), sends BYTES more and closes with SO_LINGER 0,
                    which discards what is still queued and sends a reset:
                    pollcat, receiving, sees its transfer cut short.
  read-kill BYTES   reads BYTES bytes of what pollcat sends, then kills
                    itself with SIGKILL while more is unread in its receive
                    queue; the kernel then resets the connection, as when
                    a real peer process is killed mid-transfer.
  reply-after-eof BYTES DELAY
                    reads to the end of input (pollcat's half-close), waits
                    DELAY seconds, then sends BYTES bytes and closes: the
                    HTTP/1.0-style exchange of nc -q 0.
  greet BYTES       sends a greeting line, reads to the end of input (at
                    most 30 s), writes what it read to PORTFILE.got, then
                    sends BYTES bytes and closes: a server that talks first
                    and waits for the client to finish.
"""
import os
import signal
import socket
import struct
import sys

mode, portfile = sys.argv[1], sys.argv[2]
count = int(sys.argv[3])
ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
ls.bind(("127.0.0.1", 0))
ls.listen(1)
with open(portfile + ".tmp", "w") as f:
    f.write("%d\n" % ls.getsockname()[1])
os.rename(portfile + ".tmp", portfile)
c, _ = ls.accept()
if mode == "send-reset":
    import time
    block = os.urandom(65536)
    for part in range(2):
        sent = 0
        while sent < count:
            sent += c.send(block[: min(len(block), count - sent)])
        if part == 0:
            time.sleep(0.5)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()
elif mode == "read-kill":
    got = 0
    while got < count:
        d = c.recv(65536)
        if not d:
            sys.exit("peer: end of input after %d bytes" % got)
        got += len(d)
    # Wait until more has arrived unread, so that the close is a reset.
    import select
    select.select([c], [], [], 10)
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "reply-after-eof":
    import time
    got = 0
    while True:
        d = c.recv(65536)
        if not d:
            break
        got += len(d)
    time.sleep(float(sys.argv[4]))
    c.sendall(b"r" * count)
    c.close()
    sys.stderr.write("peer: request of %d bytes\n" % got)
elif mode == "greet":
    c.sendall(b"hello from peer\n")
    # A client that never ends its input fails the test, not hangs it.
    c.settimeout(30)
    data = b""
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            data += d
    except socket.timeout:
        sys.exit("peer: no end of input after 30 s (%d bytes)" % len(data))
    with open(portfile + ".got", "wb") as f:
        f.write(data)
    c.sendall(b"b" * count)
    c.close()
    sys.stderr.write("peer: read %d bytes to the end of input\n" % len(data))
else:
    sys.exit("peer: unknown mode " + mode)
