"""The request log (issue 17): one line a request with method, path, status, duration and the
request id an answer carries (so a 500's id can be found), as text or as JSON objects with
``edge serve --log-format json``."""

from __future__ import annotations

import json

import httpx
from support.nodes import NodeProcess


def test_every_request_has_one_json_line_with_the_id_its_answer_carries(tmp_path):
    node = NodeProcess(tmp_path / "data", args=("--log-format", "json")).start()
    try:
        found = httpx.get(node.url + "/healthz")
        missing = httpx.get(node.url + "/api/projects/prj_0000000000000000/public-info")
        assert (found.status_code, missing.status_code) == (200, 404)
    finally:
        assert node.terminate() == 0
    lines = [json.loads(line) for line in node.log.read_text().splitlines() if line.startswith("{")]
    access = [line for line in lines if line["logger"] == "edge.access"]
    by_id = {line["requestId"]: line for line in access}
    for answer, status in ((found, 200), (missing, 404)):
        line = by_id[answer.headers["cm-request-id"]]
        assert (line["method"], line["path"], line["status"]) == (
            "GET",
            answer.request.url.path,
            status,
        )
        assert line["durationMs"] >= 0 and line["level"] == "INFO"
    assert all("time" in line and "message" in line for line in lines)


def test_text_lines_name_the_request_id_too(tmp_path):
    node = NodeProcess(tmp_path / "data").start()
    try:
        answer = httpx.get(node.url + "/healthz")
    finally:
        assert node.terminate() == 0
    request_id = answer.headers["cm-request-id"]
    (line,) = [line for line in node.log.read_text().splitlines() if request_id in line]
    assert "edge.access: GET /healthz 200 " in line
