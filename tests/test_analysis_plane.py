"""Parameter planes (render/analysis/plane.py): parsing KEY=LO:HI:N axes."""

from __future__ import annotations

import pytest

from physarum.render.analysis.errors import AnalysisError
from physarum.render.analysis.plane import parse_plane_axis


def test_plane_axis_parsing():
    axis = parse_plane_axis("model.deposit=1:10:4")
    assert axis.key == "model.deposit" and axis.values == (1.0, 4.0, 7.0, 10.0)
    assert parse_plane_axis("model.decay=0.2:0.9:1").values == (0.2,)
    with pytest.raises(AnalysisError):
        parse_plane_axis("model.decay=nan:1:2")
