"""Swept values as short labels, for job listings, error messages, the gallery and the contact
sheet."""

from __future__ import annotations


def format_value(value) -> str:
    """A swept value as a short label: 45 for 45.0, [magma, ice] for a list."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def format_params(params: dict) -> str:
    """Swept values as `key=value, ...`, in the order the sweep file names them."""
    return ", ".join(f"{key}={format_value(value)}" for key, value in params.items())
