"""Without the provider data the conformance checks skip, unless CI requires them."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.conftest import PROVIDER_DATA, REQUIRE_ENV, provider_data_dir


def test_the_data_is_looked_for_beside_the_repository() -> None:
    repository = Path(__file__).resolve().parents[2]
    assert (repository / "pyproject.toml").is_file()
    assert repository.parent / "shared" / "provider-data" == PROVIDER_DATA


def test_present_data_is_used(tmp_path: Path) -> None:
    assert provider_data_dir(tmp_path, {}) == tmp_path


@pytest.mark.parametrize("env", [{}, {REQUIRE_ENV: "0"}, {REQUIRE_ENV: ""}])
def test_absent_data_skips_with_a_one_line_reason(tmp_path: Path, env: dict[str, str]) -> None:
    with pytest.raises(pytest.skip.Exception) as skipped:
        provider_data_dir(tmp_path / "absent", env)
    reason = str(skipped.value)
    assert "\n" not in reason and "provider data" in reason and "absent" in reason


def test_absent_data_fails_when_required(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        provider_data_dir(tmp_path / "absent", {REQUIRE_ENV: "1"})
    assert REQUIRE_ENV in str(failed.value)
