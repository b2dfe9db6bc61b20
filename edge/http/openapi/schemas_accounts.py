"""The shapes of the account endpoints beyond sign-up and login: the account's own view, its
two-factor login, the login's second step, password reset, and the operator's hand on
accounts."""

from __future__ import annotations

from edge.domain import emails
from edge.http.openapi.schemas import TIME, Schema, body_schema, object_schema, ref

ACCOUNT_ID: Schema = {"type": "string", "pattern": "^acc_[0-9A-HJKMNP-TV-Z]{26}$"}
EMAIL: Schema = {"type": "string", "maxLength": emails.MAX_LENGTH, "pattern": emails.PATTERN}
CODE: Schema = {
    "type": "string",
    "minLength": 1,
    "maxLength": 40,
    "description": "The 6 digits of the authenticator app, or one of the recovery codes.",
}
TOKEN: Schema = {"type": "string", "minLength": 1, "maxLength": 100}


_CURRENT_PASSWORD = {"type": "string", "minLength": 1, "maxLength": 1024}


def account_schemas() -> dict[str, Schema]:
    return {
        "AccountView": object_schema(
            {
                "accountId": ACCOUNT_ID,
                "email": {"type": "string"},
                "tier": {"type": "string"},
                "operator": {
                    "type": "boolean",
                    "description": "An operator account sees and manages every project.",
                },
                "twoFactor": {"type": "boolean"},
                "recoveryCodesLeft": {"type": "integer", "minimum": 0, "maximum": 10},
            }
        ),
        "AccountList": object_schema(
            {
                "items": {
                    "type": "array",
                    "items": {
                        "allOf": [
                            ref("AccountView"),
                            object_schema({"projects": {"type": "integer", "minimum": 0}}),
                        ]
                    },
                }
            }
        ),
        "CodeRequest": body_schema({"code": CODE}, ["code"]),
        "PasswordRequest": body_schema(
            {"password": _CURRENT_PASSWORD},
            ["password"],
            description="The account's current password: a stolen session alone changes"
            " nothing here.",
        ),
        "PasswordChangeRequest": body_schema(
            {
                "password": _CURRENT_PASSWORD,
                "newPassword": {"type": "string", "minLength": 10, "maxLength": 1024},
                "code": CODE,
            },
            ["password", "newPassword"],
            description="code: when two-factor login is on, the app's current code or a"
            " recovery code.",
        ),
        "CodeAndPasswordRequest": body_schema(
            {"code": CODE, "password": _CURRENT_PASSWORD}, ["code", "password"]
        ),
        "TwoFactorEnrolment": object_schema(
            {
                "secret": {"type": "string", "description": "Base32, for an app typed by hand."},
                "otpauthUri": {"type": "string", "pattern": "^otpauth://totp/"},
            }
        ),
        "TwoFactorOn": object_schema(
            {
                "twoFactor": {"const": True},
                "recoveryCodes": {
                    "type": "array",
                    "items": {"type": "string", "pattern": "^[0-9a-z]{5}-[0-9a-z]{5}$"},
                    "minItems": 10,
                    "maxItems": 10,
                    "description": "Shown this once; each logs in once instead of the app.",
                },
            }
        ),
        "TwoFactorOff": object_schema({"twoFactor": {"const": False}}),
        "SecondFactorDue": object_schema(
            {
                "twoFactorRequired": {"const": True},
                "challenge": {"type": "string"},
                "expiresAt": TIME,
            }
        ),
        "SecondFactorRequest": body_schema(
            {"challenge": TOKEN, "code": CODE}, ["challenge", "code"]
        ),
        "PasswordResetRequest": body_schema({"email": EMAIL}, ["email"]),
        "PasswordResetAccepted": object_schema(
            {"accepted": {"const": True}, "message": {"type": "string"}}
        ),
        "PasswordResetCompletion": body_schema(
            {"token": TOKEN, "password": {"type": "string", "minLength": 10, "maxLength": 1024}},
            ["token", "password"],
        ),
        "PasswordResetDone": object_schema({"accountId": ACCOUNT_ID, "email": {"type": "string"}}),
        "ResetLink": object_schema(
            {
                "accountId": ACCOUNT_ID,
                "email": {"type": "string"},
                "url": {"type": "string", "description": "The one-time link; shown only here."},
                "expiresAt": TIME,
            }
        ),
    }
