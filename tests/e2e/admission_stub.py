#!/usr/bin/env python3
"""A minimal AdmissionReview v1 server over TLS, for tests of the plumbing between kube-apiserver
and a webhook (Services, Endpoints, network namespaces, caBundles), independent of landlord's
own webhook server.

    admission_stub.py --cert C --key K --addr IP --port N

It answers every POST, whatever the path: it denies (403) an object whose labels hold
`admission-stub/deny`, with the message "denied by admission-stub at PATH", and allows anything
else. Each request is logged as one line "PATH OPERATION RESOURCE NAME" on stdout. Stops on
SIGTERM.
"""

import argparse
import http.server
import json
import signal
import ssl
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            req = json.loads(body)["request"]
        except (ValueError, KeyError, TypeError):
            self.send_error(400, "not an AdmissionReview")
            return
        path = self.path.split("?", 1)[0]  # the API server adds ?timeout=Ns
        obj = req.get("object") or req.get("oldObject") or {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        resp = {"uid": req.get("uid"), "allowed": "admission-stub/deny" not in labels}
        if not resp["allowed"]:
            resp["status"] = {"code": 403, "message": f"denied by admission-stub at {path}"}
        print(path, req.get("operation"), (req.get("resource") or {}).get("resource"),
              req.get("name"), flush=True)
        out = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                          "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, default=8443)
    a = ap.parse_args()
    srv = http.server.ThreadingHTTPServer((a.addr, a.port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"listening on {a.addr}:{srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
