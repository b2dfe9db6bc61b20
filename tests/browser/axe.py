"""axe-core, the accessibility checker, run in the browser tests' Chromium (issue 37, part 3).

The API (every browser test uses the same three calls)::

    from browser.axe import assert_accessible, require_axe, violations

    async def test_something(node, shop_site):
        require_browser()
        require_axe()  # first, on the test's own thread: installs axe-core once, or skips

        def buyer(page):
            page.goto(...)
            assert_accessible(page, "buyer window open")  # 0 violations, or a readable failure
            found = violations(page)  # or look at them yourself: list[Violation]

        await in_browser(buyer)

- ``require_axe()`` installs axe-core (``AXE_VERSION``, from the npm registry through ``npm ci``
  against a lock naming its sha512 integrity, so npm refuses any other bytes) into ``build/axe``
  (ignored by git: nothing from npm is committed), at most once per run: a file lock keeps
  pytest's parallel processes to one install, and a stamp lets the next run reuse it. Without
  npm or the network it skips the test with the reason, except under ``EDGE_REQUIRE_BROWSER=1``
  (CI), where that is a failure, as for a missing Chromium (``harness.require_browser``).
- ``violations(page, tags=WCAG_22_AA)`` injects axe into every frame of the Playwright page
  (``evaluate`` runs outside the page's Content-Security-Policy, so a strict CSP needs no
  change) and returns what ``axe.run`` finds for those tags: WCAG 2.0, 2.1 and 2.2, levels A
  and AA. Only violations: axe's "incomplete" (needs a person's review) are not failures.
- ``assert_accessible(page, where)`` saves a full-page screenshot as
  ``test-artifacts/axe-<where>.png`` (kept, pass or fail) and fails listing each violation:
  rule id, impact, help, its URL, and each failing node's target with axe's summary of why.

Both page functions are for the worker thread ``harness.in_browser`` runs a scenario on.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browser.harness import ARTIFACTS

AXE_VERSION = "4.14.1"
# npm's dist.integrity of axe-core-4.14.1.tgz (`npm view axe-core@4.14.1 dist.integrity`)
AXE_INTEGRITY = (
    "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37Ogud"
    "VGtQ=="
)
AXE_TARBALL = f"https://registry.npmjs.org/axe-core/-/axe-core-{AXE_VERSION}.tgz"
AXE_DIR = Path(__file__).resolve().parents[2] / "build" / "axe"
AXE_SCRIPT = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
WCAG_22_AA = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa")
INSTALL_TIMEOUT_S = 300


class AxeUnavailable(Exception):
    """npm is missing or the registry could not be reached (the reason is the message)."""


_source: str | None = None
_unavailable: AxeUnavailable | None = None  # said once a process: npm's retries take a minute
_source_lock = threading.Lock()


@dataclass(frozen=True)
class FailingNode:
    target: str  # axe's CSS selector of the element (frames joined by " >>> ")
    html: str
    summary: str  # axe's "Fix any of the following: ..."


@dataclass(frozen=True)
class Violation:
    id: str
    impact: str | None
    help: str
    help_url: str
    nodes: tuple[FailingNode, ...]

    def describe(self) -> str:
        lines = [f"{self.id} ({self.impact}): {self.help} <{self.help_url}>"]
        for node in self.nodes:
            lines.append(f"  - {node.target}")
            lines.append(f"      {_shorten(node.html, 160)}")
            for line in node.summary.splitlines():
                if line.strip():
                    lines.append(f"      {line.strip()}")
        return "\n".join(lines)


def require_axe() -> None:
    """Makes axe-core ready for this process, or skips the test (fails under
    EDGE_REQUIRE_BROWSER=1). Call it on the test's thread before starting the browser."""
    try:
        _axe_source()
    except AxeUnavailable as missing:
        if os.environ.get("EDGE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"accessibility checks required but axe-core is unavailable: {missing}")
        pytest.skip(f"no axe-core: {missing}")


def violations(page: Any, tags: tuple[str, ...] = WCAG_22_AA) -> list[Violation]:
    """What axe-core finds on ``page`` as it is now (every frame), for rules tagged ``tags``."""
    require_axe()
    source = _axe_source()
    for frame in page.frames:
        if not frame.is_detached() and not frame.evaluate("typeof window.axe === 'object'"):
            frame.evaluate(source + "\n;undefined")
    found = page.main_frame.evaluate(
        """async (tags) => {
          const results = await axe.run(document, {
            runOnly: {type: 'tag', values: tags}, resultTypes: ['violations'],
          });
          return results.violations.map((v) => ({
            id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
            nodes: v.nodes.map((n) => ({
              target: n.target.map((t) => Array.isArray(t) ? t.join(' >>> ') : t).join(' >>> '),
              html: n.html, summary: n.failureSummary || '',
            })),
          }));
        }""",
        list(tags),
    )
    return [
        Violation(
            id=v["id"],
            impact=v["impact"],
            help=v["help"],
            help_url=v["helpUrl"],
            nodes=tuple(FailingNode(n["target"], n["html"], n["summary"]) for n in v["nodes"]),
        )
        for v in found
    ]


def assert_accessible(
    page: Any, where: str, tags: tuple[str, ...] = WCAG_22_AA, full_page: bool = True
) -> None:
    """Fails unless axe-core finds nothing on ``page``; ``where`` names the page and state (it
    names the screenshot too, kept either way)."""
    shot = screenshot(page, where, full_page=full_page)
    found = violations(page, tags)
    if found:
        listed = "\n".join(v.describe() for v in found)
        raise AssertionError(
            f"axe-core: {len(found)} violation(s) on {where} ({page.url}), screenshot {shot}:\n"
            f"{listed}"
        )


def screenshot(page: Any, where: str, full_page: bool = True) -> Path:
    """Saves ``test-artifacts/axe-<where>.png`` and returns its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"axe-{_slug(where)}.png"
    page.screenshot(path=str(path), full_page=full_page, timeout=60_000)  # a long page, drawn 3x
    return path


def _axe_source() -> str:
    """axe.min.js's text, installed first if need be (once a process; once a run across
    processes, by the file lock)."""
    global _source, _unavailable
    with _source_lock:
        if _unavailable is not None:
            raise _unavailable
        if _source is None:
            try:
                _source = _installed().read_text(encoding="utf-8")
            except AxeUnavailable as missing:
                _unavailable = missing
                raise
        return _source


def _installed() -> Path:
    AXE_DIR.mkdir(parents=True, exist_ok=True)
    with open(AXE_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel pytest processes: one installs, others wait
        if not _is_current():
            _install()
        return AXE_SCRIPT


def _stamp() -> dict[str, str]:
    return {"version": AXE_VERSION, "integrity": AXE_INTEGRITY}


def _is_current() -> bool:
    stamp = AXE_DIR / "installed.json"
    installed = AXE_DIR / "node_modules" / "axe-core" / "package.json"
    try:
        return (
            json.loads(stamp.read_text()) == _stamp()
            and json.loads(installed.read_text())["version"] == AXE_VERSION
            and AXE_SCRIPT.is_file()
        )
    except (OSError, ValueError, KeyError):
        return False


def _install() -> None:
    """``npm ci`` from a package.json and lock written here: the exact version and its sha512,
    which npm checks against what it downloads (a mismatch is EINTEGRITY, never an install).
    No scripts run. The registry npm is configured with stands in for registry.npmjs.org."""
    npm = shutil.which("npm")
    if npm is None:
        raise AxeUnavailable("npm is not installed (Debian: apt-get install npm)")
    (AXE_DIR / "installed.json").unlink(missing_ok=True)
    package: dict[str, Any] = {"name": "edge-axe", "version": "0.0.0", "private": True}
    package["devDependencies"] = {"axe-core": AXE_VERSION}
    lock = {
        "name": "edge-axe",
        "version": "0.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {
            "": {
                "name": "edge-axe",
                "version": "0.0.0",
                "devDependencies": {"axe-core": AXE_VERSION},
            },
            "node_modules/axe-core": {
                "version": AXE_VERSION,
                "resolved": AXE_TARBALL,
                "integrity": AXE_INTEGRITY,
                "dev": True,
                "license": "MPL-2.0",
                "engines": {"node": ">=4"},
            },
        },
    }
    (AXE_DIR / "package.json").write_text(json.dumps(package, indent=2) + "\n")
    (AXE_DIR / "package-lock.json").write_text(json.dumps(lock, indent=2) + "\n")
    command = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        done = subprocess.run(
            command,
            cwd=AXE_DIR,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
            env={**os.environ, "NO_UPDATE_NOTIFIER": "1", "npm_config_update_notifier": "false"},
        )
    except subprocess.TimeoutExpired as slow:
        raise AxeUnavailable(f"npm ci took over {INSTALL_TIMEOUT_S} s (no network?)") from slow
    if done.returncode != 0:
        said = " | ".join((done.stderr or done.stdout).strip().splitlines()[:4])
        if "EINTEGRITY" in said:  # other bytes than the pinned ones: never a reason to skip
            raise RuntimeError(f"npm refused axe-core {AXE_VERSION}: {said}")
        raise AxeUnavailable(f"npm ci failed ({done.returncode}): {said}")
    if not AXE_SCRIPT.is_file():
        raise AxeUnavailable(f"npm ci succeeded but left no {AXE_SCRIPT}")
    (AXE_DIR / "installed.json").write_text(json.dumps(_stamp()) + "\n")


def _slug(where: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", where.lower()).strip("-") or "page"


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
