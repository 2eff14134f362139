"""Fixtures shared by every test (helpers that are plain functions live in tests/helpers.py)."""

from __future__ import annotations

import secrets

import pytest


@pytest.fixture
def seed() -> int:
    """A fresh seed per test run (printed on failure through the test id's locals)."""
    return secrets.randbits(31)
