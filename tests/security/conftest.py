"""Fixtures shared by the red-team modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tao.redact.known import forget_all


@pytest.fixture
def clean_known_registry() -> Iterator[None]:
    """The registry of known secret values is process-wide: a test that fills it starts
    and ends with it empty (``pytestmark = pytest.mark.usefixtures(...)``)."""
    forget_all()
    yield
    forget_all()
