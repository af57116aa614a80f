"""Print the reliability figures the tests recorded at the end of the run."""

from __future__ import annotations

import pytest

from tests.reliability.figures import LINES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Write every recorded figure line under a 'reliability figures' heading."""
    if LINES:
        terminalreporter.section("reliability figures")
        for line in LINES:
            terminalreporter.write_line(line)
