"""Keeping an account: its two-factor login, the login's second step, a password reset (by
e-mail, or by a link the operator makes), and the operator's hand on accounts."""

from __future__ import annotations

from edge.http.openapi.common import (
    ANONYMOUS,
    OPERATOR_OR_SESSION,
    SESSION,
    Operation,
    Security,
    json_answer,
    json_body,
    operation,
    path_param,
    query_param,
)
from edge.http.openapi.paths_accounts import SESSION_COOKIES
from edge.http.openapi.schemas import ref
from edge.http.openapi.schemas_accounts import ACCOUNT_ID, EMAIL

_CSRF = [{"$ref": "#/components/parameters/CmCsrf"}]
_SIGNED_IN: Security = [{SESSION: []}]
_ACCOUNT = path_param("accountId", ACCOUNT_ID, "The account's id (acc_ + ULID).")
_SECOND_STEP = (
    "A browser's post from another site's page is refused (403 csrf_failed). A code counts "
    "against the login limits of the client address and the account's e-mail."
)


def paths() -> dict[str, dict[str, Operation]]:
    return {
        "/api/account": {
            "get": operation(
                "showAccount",
                "Accounts",
                "Your account",
                "The signed-in account: its e-mail, tier, and whether two-factor login is on.",
                security=_SIGNED_IN,
                ok={200: json_answer("The account.", ref("AccountView"))},
                errors={429: ["rate_limited"]},
            )
        },
        "/api/account/two-factor": {
            "post": operation(
                "startTwoFactor",
                "Accounts",
                "Start turning two-factor login on",
                "A new TOTP secret (RFC 6238: 6 digits, 30 seconds) for an authenticator app, as "
                "text and as an otpauth:// address. It waits, sealed, until confirmed with a "
                "code within 5 minutes; another start replaces it. Needs the current password "
                "(401 reauthentication_required), counted against the login's limits; the "
                "owner is e-mailed once it is on.",
                security=_SIGNED_IN,
                parameters=_CSRF,
                body=json_body(ref("PasswordRequest")),
                ok={200: json_answer("The secret for the app.", ref("TwoFactorEnrolment"))},
                errors={
                    401: ["reauthentication_required"],
                    403: ["csrf_failed"],
                    409: ["two_factor_enabled"],
                    429: ["rate_limited"],
                },
            )
        },
        "/api/account/two-factor/confirm": {
            "post": operation(
                "confirmTwoFactor",
                "Accounts",
                "Turn two-factor login on",
                "With the app's current code, within 5 minutes of the start (its password); "
                "every code counts against the login's limits. The answer holds ten one-time "
                "recovery codes, shown this once; the node keeps only their SHA-256.",
                security=_SIGNED_IN,
                parameters=_CSRF,
                body=json_body(ref("CodeRequest")),
                ok={200: json_answer("On, with the recovery codes.", ref("TwoFactorOn"))},
                errors={
                    401: ["invalid_code", "reauthentication_required"],
                    403: ["csrf_failed"],
                    409: ["two_factor_not_started"],
                    429: ["rate_limited"],
                },
            )
        },
        "/api/account/two-factor/disable": {
            "post": operation(
                "disableTwoFactor",
                "Accounts",
                "Turn two-factor login off",
                "With the current password and a code of the app or a recovery code, both "
                "counted against the login's limits; the owner is e-mailed.",
                security=_SIGNED_IN,
                parameters=_CSRF,
                body=json_body(ref("CodeAndPasswordRequest")),
                ok={200: json_answer("Off.", ref("TwoFactorOff"))},
                errors={
                    401: ["invalid_code", "reauthentication_required"],
                    403: ["csrf_failed"],
                    409: ["two_factor_disabled"],
                    429: ["rate_limited"],
                },
            )
        },
        "/api/account/password": {
            "post": operation(
                "changePassword",
                "Accounts",
                "Change the password",
                "With the current password, and the current code of the app (or a recovery "
                "code) when two-factor login is on (401 reauthentication_required otherwise), "
                "each counted against the login's limits. Every session of the account ends; "
                "this answer opens a new one for the caller. The owner is e-mailed.",
                security=_SIGNED_IN,
                parameters=_CSRF,
                body=json_body(ref("PasswordChangeRequest")),
                ok={
                    200: json_answer(
                        "The caller's new session.", ref("Session"), limited=True, **SESSION_COOKIES
                    )
                },
                errors={
                    401: ["reauthentication_required", "unauthorized"],
                    403: ["csrf_failed"],
                    429: ["rate_limited"],
                },
            )
        },
        "/api/session/two-factor": {
            "post": operation(
                "completeLogin",
                "Accounts",
                "Log in: the second factor",
                "After POST /api/session answered 202 with a challenge: the challenge and the "
                "app's code (or a recovery code, spent by its use) for the session. A challenge "
                "lasts 5 minutes and 5 wrong codes (then 401 challenge_expired: log in again). "
                + _SECOND_STEP,
                security=ANONYMOUS,
                body=json_body(ref("SecondFactorRequest")),
                ok={
                    200: json_answer(
                        "The session.", ref("Session"), limited=True, **SESSION_COOKIES
                    )
                },
                errors={
                    401: ["invalid_code", "challenge_expired"],
                    403: ["csrf_failed"],
                    429: ["rate_limited"],
                },
            )
        },
        "/api/accounts/password-reset": {
            "post": operation(
                "requestPasswordReset",
                "Accounts",
                "Forgot a password",
                "On a node with EDGE_SMTP_URL: e-mails a one-time link to set a new password "
                "(valid for an hour) to the account with this address. The answer is the same "
                "whether or not an account has it, and comes before anything is looked up. "
                "Without EDGE_SMTP_URL, 403 reset_by_operator: the operator makes links "
                "(edge account reset-link). 5 requests a minute per client address, 3 an hour "
                "per e-mail. A browser's post from another site's page is refused.",
                security=ANONYMOUS,
                body=json_body(ref("PasswordResetRequest")),
                ok={202: json_answer("Accepted.", ref("PasswordResetAccepted"), limited=True)},
                errors={403: ["reset_by_operator", "csrf_failed"], 429: ["rate_limited"]},
            )
        },
        "/api/accounts/password-reset/complete": {
            "post": operation(
                "completePasswordReset",
                "Accounts",
                "Set a new password with a reset link",
                "The link's token and the new password. The link works once; every session "
                "of the account ends, and so do its other links and any login waiting for a "
                "second factor. An unknown, used or expired link: 404 reset_link_invalid.",
                security=ANONYMOUS,
                body=json_body(ref("PasswordResetCompletion")),
                ok={
                    200: json_answer("The password is set.", ref("PasswordResetDone"), limited=True)
                },
                errors={
                    403: ["csrf_failed"],
                    404: ["reset_link_invalid"],
                    429: ["rate_limited"],
                },
            )
        },
        "/api/manage/accounts": {
            "get": operation(
                "listAccounts",
                "Accounts",
                "The node's accounts, or the one with an e-mail",
                "The operator's (its token, or an operator account's session): every account, "
                "or with `email` the one with that e-mail (none or one), each with how many "
                "projects it owns.",
                security=OPERATOR_OR_SESSION,
                parameters=[query_param("email", EMAIL, "Only the account with this e-mail.")],
                ok={200: json_answer("The accounts.", ref("AccountList"))},
                errors={400: ["invalid_request"], 403: ["forbidden"], 429: ["rate_limited"]},
            )
        },
        "/api/manage/accounts/{accountId}": {
            "patch": operation(
                "patchAccount",
                "Accounts",
                "Make an account an operator, or no longer",
                "The operator's (edge account operator EMAIL [--off]): an operator account "
                "sees and manages every project in the dashboard and the API, those made with "
                "the command line included.",
                security=OPERATOR_OR_SESSION,
                parameters=[_ACCOUNT],
                body=json_body(ref("AccountPatch")),
                ok={200: json_answer("The account.", ref("AccountView"))},
                errors={
                    400: ["invalid_request", "unknown_field"],
                    403: ["forbidden"],
                    404: ["account_not_found"],
                    429: ["rate_limited"],
                },
            )
        },
        "/api/manage/accounts/{accountId}/reset-link": {
            "post": operation(
                "makeResetLink",
                "Accounts",
                "Make a password reset link",
                "The operator's (edge account reset-link): a one-time link to set the "
                "account's password, valid for an hour; the node keeps only its hash.",
                security=OPERATOR_OR_SESSION,
                parameters=[_ACCOUNT],
                ok={201: json_answer("The link.", ref("ResetLink"))},
                errors={403: ["forbidden"], 404: ["account_not_found"], 429: ["rate_limited"]},
            )
        },
        "/api/manage/accounts/{accountId}/two-factor": {
            "delete": operation(
                "removeTwoFactor",
                "Accounts",
                "Turn an account's two-factor login off",
                "The operator's (edge account 2fa-remove), for an owner who lost the app and "
                "the recovery codes.",
                security=OPERATOR_OR_SESSION,
                parameters=[_ACCOUNT],
                ok={200: json_answer("The account.", ref("AccountView"))},
                errors={403: ["forbidden"], 404: ["account_not_found"], 429: ["rate_limited"]},
            )
        },
    }
