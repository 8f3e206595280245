#!/usr/bin/env python3
"""Publish one SMS job to Herald from your own system (pika; Herald's job contract: deploy/asyncapi.yaml).

    HERALD_AMQP_URL=amqp://crm:secret@rabbit:5672/%2f HERALD_PRODUCER_ID=crm \
    HERALD_PRODUCER_KEY=<base64 key from integrations.producers> \
    python3 produce_sms.py <project> <+E.164 number> "<text>"

Prints the job id; `GET /admin/v1/messages/<id>` (or `herald-admin messages show <id>`) follows it.
"""
import base64
import datetime
import hashlib
import hmac
import json
import os
import sys
import uuid

import pika


def main():
    project, to, text = sys.argv[1:4]
    key = base64.b64decode(os.environ["HERALD_PRODUCER_KEY"])
    now = datetime.datetime.now(datetime.timezone.utc)
    job = {
        "id": str(uuid.uuid4()),  # reuse the id to publish the same message again: it is sent once
        "project": project,
        "type": "sms",
        "createdAt": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "expiresAt": (now + datetime.timedelta(minutes=10)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "to": to,
        "template": "text",
        "params": {"text": text},
    }
    body = json.dumps(job).encode()
    signature = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()

    connection = pika.BlockingConnection(pika.URLParameters(os.environ.get("HERALD_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f")))
    channel = connection.channel()
    channel.confirm_delivery()  # basic_publish now raises unless the broker took the job
    channel.basic_publish(
        exchange=os.environ.get("HERALD_EXCHANGE", "herald"),
        routing_key="sms",
        body=body,
        properties=pika.BasicProperties(
            message_id=job["id"],
            content_type="application/json",
            type="sms",
            delivery_mode=pika.DeliveryMode.Persistent,
            headers={"x-herald-producer": os.environ["HERALD_PRODUCER_ID"], "x-herald-signature": signature, "x-herald-schema": 1},
        ),
        mandatory=True,  # raises UnroutableError when no queue is bound (topology not declared)
    )
    connection.close()
    print(job["id"])


if __name__ == "__main__":
    main()
