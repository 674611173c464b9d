"""Fixtures of the client's tests and of its examples' tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.serving import Serve, serving


@pytest.fixture(scope="module")
def serve() -> Iterator[Serve]:
    """Each test module's own `snapwake serve --demo`, stopped after it."""
    yield from serving()
