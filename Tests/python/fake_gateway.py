"""A fake SMS gateway for the cross-host test: runs on host A (inside its network namespace), so it is
its own process rather than the in-process FakeSMSGateway.

POST /sms        records {to, reference, from, at} and answers 200 {"messageId": …} (as the generic
                 gateway contract asks); while a hold is set for the caller's address, the answer waits
                 until the hold is released (the test kills a worker whose requests all sit here).
POST /hold?ip=X  hold requests from X;  POST /release  answer them all
GET  /held?ip=X  how many requests from X wait;  GET /records  every request, oldest first
"""
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

lock = threading.Lock()
records = []
held = {}
hold_ip = None
released = threading.Event()
released.set()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, payload):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        global hold_ip
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        caller = self.client_address[0]
        if url.path == "/sms":
            message = json.loads(body or b"{}")
            with lock:
                records.append({"to": message.get("to"), "reference": message.get("reference"), "from": caller, "at": time.time()})
                waiting = hold_ip == caller
                if waiting:
                    held[caller] = held.get(caller, 0) + 1
            if waiting:
                released.wait(60)
            self.answer(200, {"messageId": str(uuid.uuid4())})
        elif url.path == "/hold":
            with lock:
                hold_ip = parse_qs(url.query)["ip"][0]
                held[hold_ip] = 0
                released.clear()
            self.answer(200, {})
        elif url.path == "/release":
            with lock:
                hold_ip = None
            released.set()
            self.answer(200, {})
        else:
            self.answer(404, {})

    def do_GET(self):
        url = urlparse(self.path)
        with lock:
            if url.path == "/records":
                payload = list(records)
            elif url.path == "/held":
                payload = {"held": held.get(parse_qs(url.query)["ip"][0], 0)}
            else:
                payload = None
        if payload is None:
            self.answer(404, {})
        else:
            self.answer(200, payload)


if __name__ == "__main__":
    server = ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), Handler)
    server.daemon_threads = True
    print("fake gateway listening", flush=True)
    server.serve_forever()
