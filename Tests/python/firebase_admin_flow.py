"""firebase-admin (Python) against herald-api in emulator-host mode.

    FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:PORT python firebase_admin_flow.py PROJECT_ID STEP [ARGS]

Steps (each prints one JSON object):
  create EMAIL PHONE     create_user(email=, phone_number=, display_name=) -> {"uid"}
  get UID EMAIL PHONE    get_user, get_user_by_email, get_user_by_phone_number -> the three records (null when not found)
  link EMAIL URL         generate_sign_in_with_email_link(EMAIL, ActionCodeSettings(url=URL)) -> {"link"}
  list                   list_users() -> {"uids"}
  claims UID JSON        set_custom_user_claims(UID, JSON), then get_user -> {"customClaims"}
  verify ID_TOKEN        verify_id_token(ID_TOKEN) -> the decoded claims
  delete UID             delete_user, then get_user -> {"deleted": true, "notFoundAfter": true}
  password EMAIL PW      create_user(email=, password=) -> {"uid"}
  set_password UID PW    update_user(UID, password=) -> {"uid"}
  reset_link EMAIL       generate_password_reset_link -> {"link"}
  verify_link EMAIL      generate_email_verification_link -> {"link"}
  import PREFIX          import_users once per hash (scrypt with Firebase's test vector and an apple.com
                         identity, pbkdf2_sha256, hmac_sha256, bcrypt) and once with bad records
                         -> {"<hash>": {"success", "failure", "errors": [[index, reason]]}, "passwords": {email: password}}
Errors print {"error": <class>, "message": <text>} and exit 1.
"""
import base64
import hashlib
import hmac
import json
import sys
import warnings

warnings.simplefilter("ignore")  # crypt is deprecated in 3.11, and the only bcrypt in the standard library
import crypt  # noqa: E402

import firebase_admin
from firebase_admin import auth


def record(user):
    return {"uid": user.uid, "email": user.email, "phone": user.phone_number, "displayName": user.display_name,
            "emailVerified": user.email_verified, "disabled": user.disabled,
            "providers": sorted(p.provider_id for p in user.provider_data),
            "created": user.user_metadata.creation_timestamp}


def found(lookup):
    try:
        return record(lookup())
    except auth.UserNotFoundError:
        return None


def summary(result):
    return {"success": result.success_count, "failure": result.failure_count,
            "errors": [[e.index, e.reason] for e in result.errors]}


def import_users(prefix):
    """Each of Firebase's hashes the issue names, made the way the source system made it."""
    out, passwords = {}, {}
    salt = b"NaCl-" + prefix.encode()
    # Firebase's modified scrypt: the vector firebase-admin's own integration test imports.
    scrypt_key = base64.b64decode("jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==")
    scrypt_user = auth.ImportUserRecord(
        uid=prefix + "-scrypt", email=prefix + "-scrypt@example.com", email_verified=True, display_name="Scrypt User",
        phone_number="+15555550177", custom_claims={"plan": "pro"},
        password_hash=base64.b64decode("V358E8LdWJXAO7muq0CufVpEOXaj8aFiC7T/rcaGieN04q/ZPJ08WhJEHGjj9lz/2TT+/86N5VjVoc5DdBhBiw=="),
        password_salt=b"NaCl",
        provider_data=[auth.UserProvider(uid="apple-" + prefix, provider_id="apple.com", email=prefix + "-scrypt@example.com")])
    out["scrypt"] = summary(auth.import_users([scrypt_user], hash_alg=auth.UserImportHash.scrypt(
        key=scrypt_key, salt_separator=base64.b64decode("Bw=="), rounds=8, memory_cost=14)))
    passwords[prefix + "-scrypt@example.com"] = "password"

    pw = "pbkdf2-" + prefix
    user = auth.ImportUserRecord(uid=prefix + "-pbkdf2", email=prefix + "-pbkdf2@example.com", password_salt=salt,
                                 password_hash=hashlib.pbkdf2_hmac("sha256", pw.encode(), salt, 100000, 64))
    out["pbkdf2"] = summary(auth.import_users([user], hash_alg=auth.UserImportHash.pbkdf2_sha256(rounds=100000)))
    passwords[prefix + "-pbkdf2@example.com"] = pw

    pw = "hmac-" + prefix
    user = auth.ImportUserRecord(uid=prefix + "-hmac", email=prefix + "-hmac@example.com", password_salt=salt,
                                 password_hash=hmac.new(b"hmac-key", pw.encode() + salt, hashlib.sha256).digest())
    out["hmac"] = summary(auth.import_users([user], hash_alg=auth.UserImportHash.hmac_sha256(key=b"hmac-key")))
    passwords[prefix + "-hmac@example.com"] = pw

    pw = "bcrypt-" + prefix
    hashed = crypt.crypt(pw, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 6))
    user = auth.ImportUserRecord(uid=prefix + "-bcrypt", email=prefix + "-bcrypt@example.com", password_hash=hashed.encode())
    out["bcrypt"] = summary(auth.import_users([user], hash_alg=auth.UserImportHash.bcrypt()))
    passwords[prefix + "-bcrypt@example.com"] = pw

    # A record the server refuses (its email is taken) between two good ones: reported by index.
    users = [auth.ImportUserRecord(uid=prefix + "-a"), auth.ImportUserRecord(uid=prefix + "-b", email=prefix + "-hmac@example.com"),
             auth.ImportUserRecord(uid=prefix + "-c")]
    out["bad"] = summary(auth.import_users(users))
    out["passwords"] = passwords
    return out


def main():
    project, step, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    firebase_admin.initialize_app(options={"projectId": project})
    if step == "create":
        user = auth.create_user(email=args[0], phone_number=args[1], display_name="Admin Made")
        out = {"uid": user.uid, "record": record(user)}
    elif step == "get":
        out = {"byUid": found(lambda: auth.get_user(args[0])), "byEmail": found(lambda: auth.get_user_by_email(args[1])),
               "byPhone": found(lambda: auth.get_user_by_phone_number(args[2]))}
    elif step == "link":
        settings = auth.ActionCodeSettings(url=args[1], handle_code_in_app=True)
        out = {"link": auth.generate_sign_in_with_email_link(args[0], settings)}
    elif step == "claims":
        auth.set_custom_user_claims(args[0], json.loads(args[1]))
        out = {"customClaims": auth.get_user(args[0]).custom_claims}
    elif step == "verify":
        out = auth.verify_id_token(args[0])
    elif step == "list":
        out = {"uids": sorted(u.uid for u in auth.list_users().iterate_all())}
    elif step == "delete":
        auth.delete_user(args[0])
        try:
            auth.get_user(args[0])
            gone = False
        except auth.UserNotFoundError:
            gone = True
        out = {"deleted": True, "notFoundAfter": gone}
    elif step == "password":
        out = {"uid": auth.create_user(email=args[0], password=args[1]).uid}
    elif step == "set_password":
        out = {"uid": auth.update_user(args[0], password=args[1]).uid}
    elif step == "reset_link":
        out = {"link": auth.generate_password_reset_link(args[0])}
    elif step == "verify_link":
        out = {"link": auth.generate_email_verification_link(args[0])}
    elif step == "import":
        out = import_users(args[0])
    else:
        raise SystemExit(f"unknown step {step}")
    print(json.dumps(out))


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # report, for the Swift test to show
        print(json.dumps({"error": type(error).__name__, "message": str(error)}))
        sys.exit(1)
