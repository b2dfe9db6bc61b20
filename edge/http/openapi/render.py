"""``/docs``: the document as one HTML page, rendered on the node. Plain HTML with no script
and no style of its own, so the page runs under the node's strict CSP and reads in any
browser, a terminal browser included. Everything from the document is escaped."""

from __future__ import annotations

import functools
import json
from html import escape
from typing import Any

from edge.http.openapi.document import document

METHODS = ("get", "put", "post", "patch", "delete")


def _anchor(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower()


def _type(schema: Any) -> str:
    """A schema in a few words: ``TxId``, ``string (^tx_...)``, ``array of Event``."""
    if not isinstance(schema, dict) or not schema:
        return "any"
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f'<a href="#schema-{_anchor(name)}">{escape(name)}</a>'
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    if "allOf" in schema:
        return " and ".join(_type(s) for s in schema["allOf"])
    if "const" in schema:
        return f"<code>{escape(json.dumps(schema['const']))}</code>"
    if "enum" in schema:
        values = schema["enum"]
        shown = ", ".join(f"<code>{escape(str(v))}</code>" for v in values[:20])
        return f"one of {shown}" + (" …" if len(values) > 20 else "")
    kind = schema.get("type", "object")
    if kind == "array":
        return f"array of {_type(schema.get('items'))}"
    rules = [
        escape(f"{name} {schema[key]}")
        for key, name in (
            ("minimum", "≥"),
            ("exclusiveMinimum", ">"),
            ("maximum", "≤"),
            ("minLength", "length ≥"),
            ("maxLength", "length ≤"),
            ("maxProperties", "keys ≤"),
            ("maxItems", "items ≤"),
            ("default", "default"),
        )
        if key in schema
    ]
    if "pattern" in schema:
        rules.append(f"<code>{escape(schema['pattern'])}</code>")
    return escape(str(kind)) + (f" ({', '.join(rules)})" if rules else "")


def _properties(schema: dict[str, Any]) -> str:
    props = schema.get("properties") or {}
    if not props:
        return ""
    required = set(schema.get("required", []))
    rows = "".join(
        f"<tr><td><code>{escape(name)}</code></td><td>{'yes' if name in required else ''}</td>"
        f"<td>{_type(prop)}</td><td>{escape(prop.get('description', ''))}</td></tr>"
        for name, prop in props.items()
    )
    return (
        "<table><thead><tr><th>field</th><th>required</th><th>type</th><th>notes</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
    )


def _example(value: Any) -> str:
    return f"<pre>{escape(json.dumps(value, indent=2))}</pre>"


def _operation(method: str, path: str, op: dict[str, Any]) -> str:
    parts = [
        f'<section id="{_anchor(op["operationId"])}">',
        f"<h3><code>{method.upper()} {escape(path)}</code></h3>",
        f"<p><strong>{escape(op['summary'])}</strong></p>",
        f"<p>{escape(op['description'])}</p>" if op.get("description") else "",
    ]
    security = op.get("security", [])
    schemes = [name for item in security for name in item] or ["none"]
    anonymous = "anonymous, " if {} in security and len(security) > 1 else ""
    parts.append(f"<p>Credentials: {anonymous}{escape(', '.join(schemes))}</p>")
    params = [p for p in op.get("parameters", []) if "$ref" not in p]
    if params:
        rows = "".join(
            f"<tr><td><code>{escape(p['name'])}</code></td><td>{escape(p['in'])}</td>"
            f"<td>{'yes' if p.get('required') else ''}</td><td>{_type(p['schema'])}</td>"
            f"<td>{escape(p.get('description', ''))}</td></tr>"
            for p in params
        )
        parts.append(
            "<h4>Parameters</h4><table><thead><tr><th>name</th><th>in</th><th>required</th>"
            f"<th>type</th><th>notes</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    body = op.get("requestBody")
    if body:
        schema = body["content"]["application/json"]["schema"]
        optional = "" if body.get("required") else " (optional)"
        parts.append(f"<h4>Body{optional}</h4><p>{_type(schema)}</p>")
    answers = []
    for status, answer in op["responses"].items():
        media = answer.get("content", {})
        shape = ", ".join(
            f"{escape(kind)}: {_type(content.get('schema'))}" for kind, content in media.items()
        )
        answers.append(
            f"<tr><td>{escape(status)}</td><td>{escape(answer['description'])}</td>"
            f"<td>{shape}</td></tr>"
        )
    parts.append(
        "<h4>Answers</h4><table><thead><tr><th>status</th><th>meaning and codes</th>"
        f"<th>body</th></tr></thead><tbody>{''.join(answers)}</tbody></table>"
    )
    for answer in op["responses"].values():
        for name, link in (answer.get("links") or {}).items():
            target = link["operationId"]
            parts.append(
                f'<p>Link {escape(name)}: <a href="#{_anchor(target)}">{escape(target)}</a> '
                f"with <code>{escape(json.dumps(link['parameters']))}</code></p>"
            )
    parts.append("</section>")
    return "".join(parts)


@functools.cache
def render() -> bytes:
    doc = document()
    by_tag: dict[str, list[str]] = {tag["name"]: [] for tag in doc["tags"]}
    index: dict[str, list[str]] = {tag["name"]: [] for tag in doc["tags"]}
    for path, item in doc["paths"].items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            tag = op["tags"][0]
            by_tag[tag].append(_operation(method, path, op))
            index[tag].append(
                f'<li><a href="#{_anchor(op["operationId"])}"><code>{method.upper()} '
                f"{escape(path)}</code></a> {escape(op['summary'])}</li>"
            )
    toc = "".join(
        f'<li><a href="#tag-{_anchor(tag)}">{escape(tag)}</a><ul>{"".join(items)}</ul></li>'
        for tag, items in index.items()
    )
    sections = "".join(
        f'<section id="tag-{_anchor(tag["name"])}"><h2>{escape(tag["name"])}</h2>'
        f"<p>{escape(tag['description'])}</p>{''.join(by_tag[tag['name']])}</section>"
        for tag in doc["tags"]
    )
    components = doc["components"]
    schemes = "".join(
        f"<dt><code>{escape(name)}</code></dt><dd>{escape(s.get('description', ''))}</dd>"
        for name, s in components["securitySchemes"].items()
    )
    shapes = []
    for name, schema in components["schemas"].items():
        parts = [f'<section id="schema-{_anchor(name)}"><h3>{escape(name)}</h3>']
        if schema.get("description"):
            parts.append(f"<p>{escape(schema['description'])}</p>")
        parts.append(f"<p>{_type(schema)}</p>" if "properties" not in schema else "")
        parts.append(_properties(schema))
        for example in schema.get("examples", [])[:1]:
            parts.append(_example(example))
        parts.append("</section>")
        shapes.append("".join(parts))
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(doc['info']['title'])}: API reference</title>"
        '<link rel="stylesheet" href="/static/docs.css"></head><body>'
        f"<header><h1>{escape(doc['info']['title'])}: API reference</h1>"
        f"<p>Version {escape(doc['info']['version'])}. The machine-readable document: "
        '<a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p>'
        f"<p>{escape(doc['info']['description'])}</p></header>"
        f"<nav><h2>Contents</h2><ul>{toc}"
        '<li><a href="#credentials">Credentials</a></li>'
        '<li><a href="#schemas">Record shapes</a></li></ul></nav>'
        f"<main>{sections}"
        f'<section id="credentials"><h2>Credentials</h2><dl>{schemes}</dl>'
        "<p>Both are sent as <code>Authorization: Bearer ...</code>.</p></section>"
        f'<section id="schemas"><h2>Record shapes</h2>{"".join(shapes)}</section>'
        "</main></body></html>"
    )
    return page.encode()
