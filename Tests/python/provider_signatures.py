"""Signs and checks SMS providers' webhook and request signatures with the providers' own libraries,
so that Herald's signatures (and the fakes that stand in for the providers) are proven against them:
twilio's RequestValidator, the Vonage SDK (v4 for the HMAC modes; v3, the last with the dashboard's
plain MD5-hash mode, from its own directory) and PyNaCl for Telnyx's Ed25519.

Reads a JSON list of cases on stdin; writes one result per case on stdout, in order:
- {"kind": "twilio", "url", "params": [[name, value], ...], "token", "signature"}
  -> {"signature": the library's, "valid": whether the library accepts the given signature}
- {"kind": "vonage", "method": "md5hash" | "sha256", "params": {...}, "secret"}
  -> {"signature": the library's sig over params (sig left out), "valid": the library's check of params["sig"]}
- {"kind": "telnyx", "seed": base64, "timestamp", "body": text, "signature": base64}
  -> {"publicKey": base64, "signature": PyNaCl's, "valid": whether PyNaCl accepts the given one}
"""

import base64
import json
import os
import subprocess
import sys

VONAGE3 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".herald", "pylib", "vonage3")


def twilio(case):
    from twilio.request_validator import RequestValidator
    from urllib.parse import urlencode

    validator = RequestValidator(case["token"])
    # The library takes a dict, or a MultiDict-like object with getall for repeated names.
    class Multi(dict):
        def __init__(self, pairs):
            super().__init__()
            self.pairs = pairs
            for name, value in pairs:
                self.setdefault(name, value)

        def getall(self, name):
            return [value for key, value in self.pairs if key == name]

    params = Multi(case["params"])
    return {
        "signature": validator.compute_signature(case["url"], params),
        "valid": validator.validate(case["url"], params, case["signature"]),
    }


def vonage_sha256(case):
    from vonage_http_client.auth import Auth

    auth = Auth(api_key="key", signature_secret=case["secret"], signature_method="sha256")
    unsigned = {k: v for k, v in case["params"].items() if k != "sig"}
    return {"signature": auth.sign_params(dict(unsigned)), "valid": auth.check_signature(dict(case["params"]))}


def vonage_md5hash(cases):
    # v3 and v4 cannot share one environment: v3 runs in its own interpreter, without site-packages.
    code = (
        "import json, sys, warnings\n"
        "warnings.simplefilter('ignore')\n"
        f"sys.path.insert(0, {VONAGE3!r})\n"
        "import vonage\n"
        "out = []\n"
        "for case in json.load(sys.stdin):\n"
        "    client = vonage.Client(key='key', signature_secret=case['secret'])\n"
        "    unsigned = {k: v for k, v in case['params'].items() if k != 'sig'}\n"
        "    out.append({'signature': client.signature(dict(unsigned)), 'valid': client.check_signature(dict(case['params']))})\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run([sys.executable, "-S", "-c", code], input=json.dumps(cases), capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def telnyx(case):
    from nacl.signing import SigningKey, VerifyKey
    from nacl.exceptions import BadSignatureError

    key = SigningKey(base64.b64decode(case["seed"]))
    message = (case["timestamp"] + "|" + case["body"]).encode()
    try:
        VerifyKey(bytes(key.verify_key)).verify(message, base64.b64decode(case["signature"]))
        valid = True
    except BadSignatureError:
        valid = False
    return {
        "publicKey": base64.b64encode(bytes(key.verify_key)).decode(),
        "signature": base64.b64encode(key.sign(message).signature).decode(),
        "valid": valid,
    }


def main():
    cases = json.load(sys.stdin)
    results = [None] * len(cases)
    md5 = [i for i, case in enumerate(cases) if case["kind"] == "vonage" and case["method"] == "md5hash"]
    for index, result in zip(md5, vonage_md5hash([cases[i] for i in md5]) if md5 else []):
        results[index] = result
    for index, case in enumerate(cases):
        if results[index] is not None:
            continue
        if case["kind"] == "twilio":
            results[index] = twilio(case)
        elif case["kind"] == "vonage":
            results[index] = vonage_sha256(case)
        elif case["kind"] == "telnyx":
            results[index] = telnyx(case)
        else:
            raise SystemExit(f"unknown kind {case['kind']}")
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
