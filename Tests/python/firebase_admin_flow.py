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
Errors print {"error": <class>, "message": <text>} and exit 1.
"""
import json
import sys

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
    else:
        raise SystemExit(f"unknown step {step}")
    print(json.dumps(out))


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # report, for the Swift test to show
        print(json.dumps({"error": type(error).__name__, "message": str(error)}))
        sys.exit(1)
