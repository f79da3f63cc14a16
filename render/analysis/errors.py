"""The error of bad input to `physarum sensitivity` (exit code 2, nothing written)."""

from __future__ import annotations

from ..base.errors import RenderError


class AnalysisError(RenderError):
    """Bad input to `physarum sensitivity` (exit code 2, nothing written)."""
