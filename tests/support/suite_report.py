"""What a run of the suite says at its end, beyond pass and fail: the suites it skipped and
why (a local run without Chromium, the providers' shared data, PostgreSQL or HAProxy skips
them; CI makes them fail instead), the time each directory took, slowest first, and the
slowest files, so the slow parts stay in sight (on worker processes, each test's time is
summed: the total exceeds the run's wall time). It also starts the slowest files first."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import PurePosixPath
from typing import Any

import pytest

_skipped: defaultdict[str, Counter[str]] = defaultdict(Counter)  # reason -> directory -> tests
_seconds: Counter[str] = Counter()  # directory -> setup, call and teardown seconds
_file_seconds: Counter[str] = Counter()  # test file -> the same
SLOWEST_FILES = 12


def file_of(nodeid: str) -> str:
    """The test file a test's node id names (``tests/x/test_y.py``)."""
    return nodeid.split("::", 1)[0]


def _directory(nodeid: str) -> str:
    parts = PurePosixPath(file_of(nodeid)).parts
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def _note_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    _skipped[reason.removeprefix("Skipped: ")][_directory(report.nodeid)] += 1


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _seconds[_directory(report.nodeid)] += report.duration
    _file_seconds[file_of(report.nodeid)] += report.duration
    if report.skipped:
        _note_skip(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module skipped whole (its tests are never collected: counted as one)."""
    if report.skipped:
        _note_skip(report)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    write = terminalreporter.write_line
    if _skipped:
        terminalreporter.section("skipped, and why")
        for reason, places in sorted(_skipped.items(), key=lambda item: -sum(item[1].values())):
            where = ", ".join(f"{place} ({count})" for place, count in places.most_common())
            write(f"{sum(places.values())} skipped: {reason} [{where}]")
    if _seconds:
        terminalreporter.section("time by directory")
        for place, seconds in _seconds.most_common():
            write(f"{seconds:8.1f} s  {place}")
        terminalreporter.section("slowest files")
        for place, seconds in _file_seconds.most_common(SLOWEST_FILES):
            write(f"{seconds:8.1f} s  {place}")


# The slowest files (the run's summary names them), started first: on worker processes
# (``make test``: each file whole on one worker, handed out in collection order) a long file
# collected last would run alone at the end while the other workers sit idle.
FIRST = (
    "tests/reference/test_schemathesis.py",
    "tests/browser/test_dashboard_a11y.py",
    "tests/e2e/test_cli.py",
    "tests/contract/test_convergence_contract.py",
    "tests/contract/test_refund_sequences.py",
    "tests/contract/test_provider_contract.py",
    "tests/reference/test_state_machine.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = file_of(item.nodeid)
        return FIRST.index(path) if path in FIRST else len(FIRST)

    items.sort(key=rank)  # stable: each file's tests, and the other files, keep their order
