"""schemathesis against a real node (the demo, in a child process), every operation of the
document, positive and negative data, in all four phases (the document's examples, coverage of
every constraint's edges, fuzzing, and the document's links as stateful sequences) and every
check schemathesis has: no failure, at 100 examples an operation. ``make fuzz`` runs 1,000.

Where the node's answer depends on what is stored rather than on the request's shape, the run
is told values this node holds (its project, an allowed return address, a pay-by-mail code
whose check character is right); the shape of everything else is left to the fuzzer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
from support.client import bearer
from support.fuzzing import SHOP, demo_node, examples

from edge.domain import ids
from edge.providers.registry import PROVIDERS

# The answers the contract gives to a well-formed request that the stored state refuses:
# 409 (a conflict: tx_exists, too_many_keys ...) and 422 (invalid_transition).
ACCEPTED_WHEN_VALID = '["2xx", "3xx", "401", "403", "404", "409", "422", "429"]'
ACCEPTED_WHEN_VALID_OR_LIMITED = '["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429"]'
# 413 is a refusal too: a body over the JSON API's 16 KiB.
REFUSED_WHEN_INVALID = (
    '["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]'
)


def config(project_id: str, scratch_id: str) -> str:
    provider_ops = ", ".join(f'"putProvider{name.capitalize()}"' for name in PROVIDERS)
    return f"""
[parameters]
"path.projectId" = "{project_id}"
# a long poll's wait is fuzzed by its own tests; here every request answers at once
"query.wait" = 0
# a code whose check character is right: a pattern cannot state a check character
"query.reference" = "{ids.new_reference_code()}"

[checks.positive_data_acceptance]
expected-statuses = {ACCEPTED_WHEN_VALID}

[checks.negative_data_rejection]
expected-statuses = {REFUSED_WHEN_INVALID}

# a checkout's own addresses must be on the origins the project has stored
[[operations]]
include-operation-id = "startCheckout"
parameters = {{ "body.successUrl" = "{SHOP}/thanks", "body.cancelUrl" = "{SHOP}/cart" }}

[[operations]]
include-operation-id = "createPortalUrl"
parameters = {{ "body.returnUrl" = "{SHOP}/account" }}

# changes to origins and providers go to a project of their own, so the demo project keeps
# what the checkouts above need
[[operations]]
include-operation-id = ["patchProject", {provider_ops}]
parameters = {{ "path.projectId" = "{scratch_id}" }}

# the path for any other provider name: links inferred from a project's providers fill it
# with one of the node's own, which its schema refuses (that name has its own operation above)
[[operations]]
include-operation-id = "putProvider"
phases.stateful.enabled = false

[[operations]]
include-operation-id = "deleteProduct"
parameters = {{ "path.productId" = "scratch" }}

# a price one of the project's enabled providers cannot charge is 400 provider_limit (CONTRACT
# 4.3): whether it is depends on the project's providers, not on the request's shape
[[operations]]
include-operation-id = "putProduct"
checks.positive_data_acceptance.expected-statuses = {ACCEPTED_WHEN_VALID_OR_LIMITED}
"""


def test_schemathesis_finds_nothing(tmp_path: Path) -> None:
    node, project_id = demo_node(tmp_path)
    try:
        scratch = httpx.post(
            f"{node.url}/api/manage/projects",
            json={"name": "Scratch", "successUrl": f"{SHOP}/ok", "cancelUrl": f"{SHOP}/no"},
            headers=bearer(node.admin_token),
        )
        scratch.raise_for_status()
        settings = tmp_path / "schemathesis.toml"
        settings.write_text(config(project_id, scratch.json()["id"]))
        command = [
            sys.executable, "-m", "schemathesis.cli", "--config-file", str(settings), "run",
            f"{node.url}/openapi.json", "--header", f"Authorization: Bearer {node.admin_token}",
            "--checks", "all", "--max-examples", str(examples(100)), "--workers", "1",
            "--phases", "examples,coverage,fuzzing,stateful",
            "--generation-database", "none", "--no-color", "--suppress-health-check", "all",
        ]  # fmt: skip
        # make test's run takes about four minutes on a quiet machine, make fuzz's over ten: the
        # budget only stops a hung run, so it is generous enough for a busy machine
        budget = 1200 if examples(100) <= 300 else 3600
        run = subprocess.run(command, capture_output=True, text=True, timeout=budget, cwd=tmp_path)
        assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]
    finally:
        node.terminate()
