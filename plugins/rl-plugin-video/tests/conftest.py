"""Fixtures of the plugin's tests; the helpers live in ``video_helpers.py``."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A fresh run directory."""
    return tmp_path / "run"
