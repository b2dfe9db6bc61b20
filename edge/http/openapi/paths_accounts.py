"""Accounts and sessions (CONTRACT 4.7): sign-up, log in, log out."""

from __future__ import annotations

from edge.http.openapi.common import (
    ANONYMOUS,
    OPERATOR_TOKEN,
    SESSION,
    Operation,
    json_answer,
    json_body,
    operation,
)
from edge.http.openapi.schemas import Schema, ref

SESSION_COOKIES: dict[str, Schema] = {
    "Set-Cookie": {
        "description": "cm_session (HttpOnly, SameSite=Lax, Secure on an https node, 14 days "
        "after its last use) and cm_csrf, the CSRF token for the dashboard's own forms.",
        "schema": {"type": "string"},
    }
}


def paths() -> dict[str, dict[str, Operation]]:
    return {
        "/api/accounts": {
            "post": operation(
                "createAccount",
                "Accounts",
                "Sign up",
                "On the free tier, no card asked. With EDGE_SIGNUP=closed only the operator's "
                "token may create accounts. `operator: true` (the operator's token only; "
                "otherwise 400 unknown_field) makes an operator account, which sees and "
                "manages every project (edge account create --operator). 10 sign-ups an hour "
                "per client address (the operator's are not counted); a password is hashed in "
                "the node's bounded pool, which answers 429 with Retry-After when full.",
                security=[{}, {OPERATOR_TOKEN: []}],
                ok={201: json_answer("The account.", ref("Account"))},
                body=json_body(ref("SignUpRequest")),
                errors={
                    401: ["unauthorized"],
                    403: ["signup_closed", "csrf_failed"],
                    409: ["account_exists"],
                    429: ["rate_limited"],
                },
            )
        },
        "/api/session": {
            "post": operation(
                "createSession",
                "Accounts",
                "Log in",
                "A session for the dashboard and the APIs of the account's projects. A wrong "
                "e-mail and a wrong password get the same answer; a browser's post from another "
                "site's page is refused (403 csrf_failed). 10 attempts a minute per "
                "client address and per e-mail; a password is checked in the node's bounded "
                "hashing pool, which answers 429 with Retry-After when full.",
                security=ANONYMOUS,
                ok={
                    200: json_answer(
                        "The session.", ref("Session"), limited=True, **SESSION_COOKIES
                    ),
                    202: json_answer(
                        "The password is right and the account has two-factor login: answer "
                        "the challenge with a code (POST /api/session/two-factor).",
                        ref("SecondFactorDue"),
                        limited=True,
                    ),
                },
                body=json_body(ref("AccountRequest")),
                errors={
                    401: ["invalid_credentials"],
                    403: ["csrf_failed"],
                    429: ["rate_limited"],
                },
            ),
            "delete": operation(
                "deleteSession",
                "Accounts",
                "Log out",
                "The session is deleted on the node, not only its cookie.",
                security=[{SESSION: []}],
                parameters=[{"$ref": "#/components/parameters/CmCsrf"}],
                ok={200: json_answer("Logged out.", ref("LoggedOut"))},
                errors={403: ["csrf_failed"]},
            ),
        },
    }
