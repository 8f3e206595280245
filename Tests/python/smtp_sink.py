"""A real SMTP server for Herald's tests (aiosmtpd), printing what it receives as JSON lines.

    python smtp_sink.py PORT [--reply REPLY]... [--starttls CERT KEY | --implicit-tls CERT KEY] [--auth USER:PASS]

Each --reply answers one DATA command in turn ("451 4.3.0 Try again later", "550 5.1.1 No such user");
after the list, every message is accepted with 250. --starttls offers STARTTLS and requires it before
MAIL; --implicit-tls speaks TLS from the first byte (smtps); --auth requires AUTH with that login. Output, one JSON object per line:
  {"event": "ready", "port": N}
  {"event": "ehlo", ...}                                                                 every EHLO
  {"event": "data", "reply": "...", "ehlo": ..., "mailFrom": ..., "rcptTos": [...]}      every DATA
  {"event": "accepted", ...parsed message...}                                             250 only
The message is parsed with Python's own email package, independently of Herald's MIME code.
"""
import argparse
import asyncio
import email
import email.policy
import json
import ssl
import sys

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Handler:
    def __init__(self, replies):
        self.replies = list(replies)

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        # One per connection (two with STARTTLS): lets tests and the benchmark count connections.
        session.host_name = hostname
        emit({"event": "ehlo", "hostname": hostname, "tls": session.ssl is not None})
        return responses

    async def handle_DATA(self, server, session, envelope):
        reply = self.replies.pop(0) if self.replies else "250 2.0.0 OK queued"
        raw = envelope.original_content or envelope.content
        emit({"event": "data", "reply": reply, "ehlo": session.host_name, "mailFrom": envelope.mail_from,
              "rcptTos": envelope.rcpt_tos,
              "tls": session.ssl is not None or server.transport.get_extra_info("ssl_object") is not None,
              "authenticated": bool(session.authenticated)})
        if reply.startswith("250"):
            emit(dict(event="accepted", ehlo=session.host_name, mailFrom=envelope.mail_from,
                      rcptTos=envelope.rcpt_tos, **parse(raw)))
        return reply


def parse(raw):
    message = email.message_from_bytes(raw, policy=email.policy.default)
    parts = {}
    for part in message.walk():
        if part.get_content_maintype() == "multipart":
            continue
        parts[part.get_content_type()] = {
            "body": part.get_content(),
            "charset": part.get_content_charset(),
            "transferEncoding": part.get("Content-Transfer-Encoding"),
        }
    lines = raw.split(b"\r\n")
    return {
        "headers": {name.lower(): str(value) for name, value in message.items()},
        "rawSubject": raw_header(raw, b"Subject"),
        "headerCounts": {name: len(message.get_all(name) or []) for name in ["From", "Date", "Message-ID", "To", "Subject"]},
        "contentType": message.get_content_type(),
        "boundary": message.get_boundary(),
        "partOrder": [p.get_content_type() for p in message.iter_parts()] if message.is_multipart() else [],
        "parts": parts,
        "maxLineLength": max(len(line) for line in lines),
        "bareLF": b"\n" in raw.replace(b"\r\n", b""),
        "defects": [str(d) for d in message.defects],
    }


def raw_header(raw, name):
    """The header as sent (folded lines joined by CRLF), before any decoding."""
    head = raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    for index, line in enumerate(head):
        if line.lower().startswith(name.lower() + b":"):
            value = [line[len(name) + 1:].strip()]
            for cont in head[index + 1:]:
                if not cont[:1] in (b" ", b"\t"):
                    break
                value.append(cont)
            return b"\r\n".join(value).decode()
    return None


def authenticator_for(login):
    user, password = login.split(":", 1)

    def authenticate(server, session, envelope, mechanism, auth_data):
        ok = auth_data.login == user.encode() and auth_data.password == password.encode()
        emit({"event": "auth", "mechanism": mechanism, "ok": ok})
        return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd answers 535 itself

    return authenticate


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--reply", action="append", default=[])
    parser.add_argument("--starttls", nargs=2)
    parser.add_argument("--implicit-tls", nargs=2)
    parser.add_argument("--auth")
    args = parser.parse_args()
    port = args.port
    options = {}
    if args.starttls or args.implicit_tls:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*(args.starttls or args.implicit_tls))
        if args.starttls:
            options.update(tls_context=context, require_starttls=True)
        else:
            options.update(ssl_context=context)
    if args.auth:
        # aiosmtpd only counts STARTTLS as TLS for auth_require_tls; with implicit TLS every byte is encrypted.
        options.update(authenticator=authenticator_for(args.auth), auth_required=True, auth_require_tls=not args.implicit_tls)
    controller = Controller(Handler(args.reply), hostname="127.0.0.1", port=port, **options)
    controller.start()
    # Standard input is a pipe from the test process: when it closes (the test run ended, or crashed),
    # this server ends too instead of lingering with the test's output open.
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), lambda: stopped.set() if not sys.stdin.buffer.read1(4096) else None)
    emit({"event": "ready", "port": port})
    try:
        await stopped.wait()
    finally:
        controller.stop()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
