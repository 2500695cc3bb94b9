"""A byte-for-byte TCP <-> Unix socket bridge, so that a process in a network namespace of the
test's (netns.py) reaches the API server on the host's loopback without the API server listening
anywhere else: on the host, `unix-to-tcp` listens on a Unix socket (the file system is shared
with the namespace) and connects to 127.0.0.1:PORT; in the namespace, `tcp-to-unix` listens on
the namespace's own 127.0.0.1:PORT and connects to that socket. TLS passes through untouched, so
the API server's certificate for 127.0.0.1 still verifies. One thread per direction and
connection; a half-close is passed on, so a closed connection closes on the other side too.

    python3 tcp_bridge.py unix-to-tcp UNIX_PATH PORT     (host)
    python3 tcp_bridge.py tcp-to-unix PORT UNIX_PATH     (namespace)

Prints "listening" once it accepts.
"""

import os
import socket
import sys
import threading


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                s.shutdown(how)
            except OSError:
                pass


def serve(listener, connect):
    print("listening", flush=True)
    while True:
        client, _ = listener.accept()
        try:
            upstream = connect()
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()


def main():
    mode = sys.argv[1]
    if mode == "unix-to-tcp":
        path, port = sys.argv[2], int(sys.argv[3])
        if os.path.exists(path):
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(128)
        serve(listener, lambda: socket.create_connection(("127.0.0.1", port)))
    elif mode == "tcp-to-unix":
        port, path = int(sys.argv[2]), sys.argv[3]
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)

        def connect():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            return s
        serve(listener, connect)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
