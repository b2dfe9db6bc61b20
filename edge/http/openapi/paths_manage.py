"""The management API (CONTRACT 4.6) and the notification endpoints (4.8): the operator's
token (every project) or an account's session (its own), each with a rate bucket of its own."""

from __future__ import annotations

from edge.domain import logfilter
from edge.http.openapi.common import (
    OPERATOR_OR_SESSION,
    Operation,
    json_answer,
    json_body,
    operation,
    path_param,
    query_param,
)
from edge.http.openapi.paths_buyer import PROJECT
from edge.http.openapi.schemas import Schema, ref
from edge.providers.registry import PROVIDERS

BASE = "/api/manage/projects/{projectId}"
ENDPOINT = path_param("endpointId", ref("EndpointId"), "The notification endpoint.")
_MISSING = ["project_not_found", "not_found"]


def _manage(
    operation_id: str,
    summary: str,
    description: str,
    ok: dict[int, Schema],
    *,
    parameters: list[Schema] | None = None,
    body: Schema | None = None,
    errors: dict[int, list[str]] | None = None,
    tag: str = "Management",
    links: dict[str, Schema] | None = None,
) -> Operation:
    refusals = {
        403: ["forbidden", "csrf_failed"],
        404: _MISSING,
        429: ["rate_limited"],
        503: ["unavailable"],
        **(errors or {}),
    }
    return operation(
        operation_id,
        tag,
        summary,
        description,
        ok=ok,
        errors=refusals,
        parameters=[*(parameters or []), {"$ref": "#/components/parameters/CmCsrf"}],
        body=body,
        security=OPERATOR_OR_SESSION,
        limited=True,
        links=links,
    )


def _answer(description: str, schema: str) -> Schema:
    return json_answer(description, ref(schema), limited=True)


def paths() -> dict[str, dict[str, Operation]]:
    project_link = {
        "GetProject": {
            "operationId": "getProject",
            "parameters": {"projectId": "$response.body#/id"},
        }
    }
    endpoint = "$response.body#/endpointId"
    endpoint_links = {
        name: {
            "operationId": op,
            "parameters": {"projectId": "$request.path.projectId", "endpointId": endpoint},
        }
        for name, op in (
            ("PatchEndpoint", "patchEndpoint"),
            ("DeleteEndpoint", "deleteEndpoint"),
            ("EndpointAttempts", "listEndpointAttempts"),
            ("ReplayEndpoint", "replayEndpoint"),
            ("TestEndpoint", "testEndpoint"),
        )
    }
    key_links = {
        "RevokeKey": {
            "operationId": "revokeKey",
            "parameters": {
                "projectId": "$request.path.projectId",
                "keyId": "$response.body#/keyId",
            },
        }
    }
    product = path_param("productId", ref("ProductId"), "The product.")
    key = path_param("keyId", ref("KeyId"), "The key.")
    return {
        "/api/manage/projects": {
            "get": _manage(
                "listProjects",
                "The projects the caller may see",
                "The operator's token: every project; a session: its account's own. In id "
                "order; next is the after of the following page, null at the end.",
                {200: _answer("A page of projects.", "ProjectList")},
                parameters=[
                    query_param("after", ref("ProjectId"), "The last id of the page before."),
                    query_param(
                        "limit", {"type": "integer", "minimum": 1, "maximum": 100}, "At most."
                    ),
                ],
                errors={400: ["invalid_request"]},
            ),
            "post": _manage(
                "createProject",
                "Create a project",
                "successUrl and cancelUrl absolute http(s) addresses; allowedOrigins at most 20 "
                "origins (https, or http on localhost); tier one of the configured tiers.",
                {201: _answer("The project.", "Project")},
                body=json_body(ref("ProjectRequest")),
                errors={400: ["url_not_allowed", "invalid_request"]},
                links=project_link,
            ),
        },
        BASE: {
            "get": _manage(
                "getProject",
                "A project with its products, providers and keys",
                "Secrets read as {set, last4}.",
                {200: _answer("The project.", "Project")},
                parameters=[PROJECT],
            ),
            "patch": _manage(
                "patchProject",
                "Change a project",
                "Any field of the project; changing tier applies its quota and limits at once.",
                {200: _answer("The project.", "Project")},
                parameters=[PROJECT],
                body=json_body(ref("ProjectPatch")),
                errors={400: ["url_not_allowed", "invalid_request"]},
            ),
        },
        f"{BASE}/products/{{productId}}": {
            "put": _manage(
                "putProduct",
                "Create or replace a product",
                "amount above zero with no more decimals than the currency has.",
                {200: _answer("The product.", "Product")},
                parameters=[PROJECT, product],
                body=json_body(ref("ProductRequest")),
                errors={
                    400: [
                        "invalid_amount",
                        "invalid_currency",
                        "invalid_request",
                        "provider_limit",
                    ],
                },
            ),
            "delete": _manage(
                "deleteProduct",
                "Delete a product",
                "",
                {200: _answer("Deleted.", "ProductDeleted")},
                parameters=[PROJECT, product],
                errors={404: [*_MISSING, "product_not_found"]},
            ),
        },
        **{
            f"{BASE}/providers/{name}": {
                "put": _manage(
                    f"putProvider{name.capitalize()}",
                    f"Enable and configure {name}",
                    "Each mode's credentials are merged into what is stored: a given field "
                    "replaces, null removes, an omitted field is kept (label and order too). "
                    "Secrets are encrypted at rest and write-only. Addresses the node calls must "
                    "be https on a public name (400 url_not_allowed), unless the operator allows "
                    "the host. Each value is checked by the shape its provider documents (400 "
                    "invalid_credential, naming the field): a secret in a field that is not "
                    "secret (a Stripe sk_ or whsec_ in publishableKey) is refused, so is a "
                    "publishable value in a secret field, and a key whose prefix says test in "
                    "the live credentials (or the reverse). Each mode given (and every "
                    "configured mode when the body turns the provider on) is then tried with "
                    "the provider's cheapest authenticated read before anything is saved: a "
                    "provider that refuses it (a wrong, revoked or other-environment key, a "
                    "missing permission, a webhook id of another app) answers 400 "
                    "credentials_refused naming the field and saves nothing; a provider that "
                    "cannot be asked leaves them saved with checks.<mode>.result unchecked.",
                    {200: _answer("The provider settings.", "ProviderSettings")},
                    parameters=[PROJECT],
                    body=json_body(ref(f"ProviderRequest{name.capitalize()}")),
                    errors={
                        400: [
                            "url_not_allowed",
                            "invalid_credential",
                            "invalid_request",
                            *(["credentials_refused"] if PROVIDERS[name].check_credentials else []),
                        ]
                    },
                )
            }
            for name in PROVIDERS
        },
        f"{BASE}/providers/{{provider}}": {
            "put": _manage(
                "putProvider",
                "Any other provider name",
                "The node's providers each have a path of their own above; any other name is "
                "404 unknown_provider.",
                {},
                parameters=[
                    PROJECT,
                    path_param(
                        "provider",
                        {"type": "string", "not": {"enum": list(PROVIDERS)}},
                        "Not a provider of this node.",
                    ),
                ],
                body=json_body({"type": "object"}),
                errors={404: [*_MISSING, "unknown_provider"]},
            )
        },
        f"{BASE}/keys": {
            "post": _manage(
                "createKey",
                "Create an API key",
                "The answer is the only time the key is shown. At most 50 keys a project.",
                {201: _answer("The new key.", "NewKey")},
                parameters=[PROJECT],
                body=json_body(ref("KeyRequest")),
                errors={409: ["too_many_keys"]},
                links=key_links,
            ),
            "get": _manage(
                "listKeys",
                "The project's keys",
                "By id, mode, name and last 4 characters.",
                {200: _answer("The keys.", "KeyList")},
                parameters=[PROJECT],
            ),
        },
        f"{BASE}/keys/{{keyId}}": {
            "delete": _manage(
                "revokeKey",
                "Revoke a key",
                "It stops working at once.",
                {200: _answer("Revoked.", "KeyRevoked")},
                parameters=[PROJECT, key],
            )
        },
        f"{BASE}/usage": {
            "get": _manage(
                "getUsage",
                "Quota used and left this month",
                "Stored webhook events per calendar month (UTC), per mode.",
                {200: _answer("The usage.", "Usage")},
                parameters=[PROJECT],
            )
        },
        f"{BASE}/deliveries": {
            "get": _manage(
                "listDeliveries",
                "Refused webhook deliveries",
                "The latest 100, newest first, with the reason.",
                {200: _answer("The deliveries.", "Deliveries")},
                parameters=[PROJECT],
            )
        },
        f"{BASE}/endpoints": {
            "post": _manage(
                "createEndpoint",
                "Register a notification endpoint",
                "The node pushes every new event of the endpoint's mode, signed as Standard "
                "Webhooks 1.0. https on a public address, or http://localhost. At most 20.",
                {201: _answer("The endpoint with its secret (shown once).", "Endpoint")},
                parameters=[PROJECT],
                body=json_body(ref("EndpointRequest")),
                errors={400: ["url_not_allowed", "invalid_request"], 409: ["too_many_endpoints"]},
                tag="Notifications",
                links=endpoint_links,
            ),
            "get": _manage(
                "listEndpoints",
                "The project's notification endpoints",
                "",
                {200: _answer("The endpoints.", "EndpointList")},
                parameters=[PROJECT],
                tag="Notifications",
            ),
        },
        f"{BASE}/endpoints/{{endpointId}}": {
            "patch": _manage(
                "patchEndpoint",
                "Change an endpoint",
                "rotateSecret: a new secret; the old one signs beside it for 24 hours.",
                {200: _answer("The endpoint.", "Endpoint")},
                parameters=[PROJECT, ENDPOINT],
                body=json_body(ref("EndpointPatch")),
                errors={400: ["url_not_allowed", "invalid_request"]},
                tag="Notifications",
            ),
            "delete": _manage(
                "deleteEndpoint",
                "Delete an endpoint",
                "",
                {200: _answer("Deleted.", "EndpointDeleted")},
                parameters=[PROJECT, ENDPOINT],
                tag="Notifications",
            ),
        },
        f"{BASE}/endpoints/{{endpointId}}/attempts": {
            "get": _manage(
                "listEndpointAttempts",
                "An endpoint's delivery attempts",
                "The latest 100, newest first.",
                {200: _answer("The attempts.", "Attempts")},
                parameters=[PROJECT, ENDPOINT],
                tag="Notifications",
            )
        },
        f"{BASE}/endpoints/{{endpointId}}/replay": {
            "post": _manage(
                "replayEndpoint",
                "Send events again",
                "since: every event after it that the endpoint takes (at most 1,000 a call); "
                "eventIds: these, whatever their type.",
                {202: _answer("Queued.", "Replay")},
                parameters=[PROJECT, ENDPOINT],
                body=json_body(ref("ReplayRequest")),
                errors={400: ["invalid_request"]},
                tag="Notifications",
            )
        },
        f"{BASE}/endpoints/{{endpointId}}/test": {
            "post": _manage(
                "testEndpoint",
                "Send a test event",
                "A sample event (a 1.00 EUR checkout.created of a transaction that does not "
                'exist, metadata.edgeTest "true") posted to the endpoint now, signed as every '
                "notification, once: what its server answered. Nothing is stored, counted or "
                "queued; an endpoint that is off is tried too.",
                {200: _answer("What the endpoint answered.", "EndpointTest")},
                parameters=[PROJECT, ENDPOINT],
                tag="Notifications",
            )
        },
        "/api/manage/trigger": {
            "post": _manage(
                "trigger",
                "Send a signed simulated provider event",
                "For a test transaction, through the node's own webhook endpoint (edge "
                "trigger). A type the provider's simulator cannot send, or a provider without "
                "one, is 409 not_simulated.",
                {200: _answer("The webhook's own status and answer.", "Triggered")},
                body=json_body(ref("TriggerRequest")),
                errors={
                    404: ["not_found", "project_not_found"],
                    409: ["not_simulated", "live_transaction", "provider_mismatch"],
                },
            )
        },
        "/api/manage/logs": {
            "get": _manage(
                "listLogs",
                "The node's recent requests and notification attempts",
                "What `edge logs --follow` shows: the last 2,000 requests (method, path without "
                "its query, status, time, request id) and notification attempts, kept in memory "
                "(never a body, a secret or anything about the buyer). Oldest first after "
                "`after` (a line's `seq`; a cursor from before a restart starts again from the "
                "oldest line); `wait` long-polls for the next line. The operator sees every "
                "project's lines; an account its own projects' only.",
                {200: _answer("The lines, and the cursor to go on from.", "LogPage")},
                parameters=[
                    query_param(
                        "after",
                        {"type": "integer", "minimum": 0, "maximum": 2**53},
                        "Only lines after this seq.",
                    ),
                    query_param(
                        "wait",
                        {"type": "integer", "minimum": 0, "maximum": 25},
                        "Seconds to wait for a line when there is none yet.",
                    ),
                    query_param(
                        "limit", {"type": "integer", "minimum": 1, "maximum": 500}, "At most."
                    ),
                    query_param("projectId", ref("ProjectId"), "Only this project's lines."),
                    query_param(
                        "status",
                        {"type": "string", "pattern": logfilter.PATTERN},
                        "Only these statuses: a code (404), a class (4xx), error (4xx, 5xx "
                        "or no answer), comma-separated.",
                    ),
                ],
                errors={400: ["invalid_request"]},
            )
        },
        "/api/manage/stats": {
            "get": _manage(
                "getStats",
                "The store writer's and the actors' counters",
                "",
                {200: _answer("The counters.", "Stats")},
            )
        },
    }
