"""The failure-class table (driver defect / infrastructure / suite error)."""

from __future__ import annotations

import pytest

from conformance.core import errors
from conformance.reporting import classify


@pytest.mark.parametrize(
    "exc, expected",
    [
        (AssertionError("x"), classify.DRIVER_DEFECT),
        (errors.WaitFailed("claim allocated", 30, failed="pod Failed"), classify.DRIVER_DEFECT),
        (errors.WaitTimeout("claim allocated", 30), classify.INFRASTRUCTURE),
        (errors.ClusterUnavailable("no API server"), classify.INFRASTRUCTURE),
        (ConnectionRefusedError(), classify.INFRASTRUCTURE),
        (errors.ConfigError("bad", source="--profile"), classify.SUITE_ERROR),
        (KeyError("spec"), classify.SUITE_ERROR),
    ],
)
def test_exceptions_map_to_one_class(exc, expected):
    assert classify.classify(exc) == expected


def test_messages_of_foreign_results_are_classified():
    assert (
        classify.classify_message("conformance.core.errors.WaitTimeout: timed out", "broken") == classify.INFRASTRUCTURE
    )
    assert classify.classify_message("ValueError: x", "broken") == classify.SUITE_ERROR
    assert classify.classify_message("", "failed") == classify.DRIVER_DEFECT
    assert classify.classify_message("whatever", "passed") is None


def test_allure2_category_regexes_match_their_classes():
    import re

    cats = {c["name"]: c for c in classify.allure2_categories() if "messageRegex" in c}
    assert re.match(
        cats["Cluster / infrastructure errors"]["messageRegex"], "conformance.core.errors.ClusterUnavailable: down"
    )
    assert not re.match(cats["Driver defects"]["messageRegex"], "conformance.core.errors.ClusterUnavailable: x")


def test_a_failed_wait_is_not_a_timeout_and_both_are_wait_errors():
    failed = errors.WaitFailed("pod running", 30, failed="pod Failed")
    timeout = errors.WaitTimeout("pod running", 30)
    assert not isinstance(failed, errors.WaitTimeout) and not isinstance(timeout, errors.WaitFailed)
    assert isinstance(failed, errors.WaitError) and isinstance(timeout, errors.WaitError)
    assert "while waiting for pod running: pod Failed" in str(failed) and "timed out after 30s" in str(timeout)
    assert (
        classify.classify_message("conformance.core.errors.WaitFailed: while waiting", "failed")
        == classify.DRIVER_DEFECT
    )
