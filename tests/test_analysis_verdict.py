"""The plain-language verdict of `physarum sensitivity` (render/analysis/verdict.py): each kind of
run gets its own words, with the numbers it rests on, and the printed summary ends with it."""

from __future__ import annotations

from physarum.render.analysis.report import summary_lines
from physarum.render.analysis.verdict import plane_verdict, point_verdict


def summary(diverged=8, grew=0, healed=0, ratio=None, exponent=None, saturation=None) -> dict:
    """A report.summarise document of eight twins with the given counts and means."""
    triple = lambda mean, n=8: {"mean": mean, "stderr": None, "n": 0 if mean is None else n}  # noqa: E731
    return {
        "all": {
            "twins": 8,
            "diverged": diverged,
            "grew": grew,
            "healed": healed,
            "exponent": triple(exponent),
            "agent_exponent": triple(None),
            "saturation_step": triple(saturation),
            "plateau_ratio": triple(ratio),
        }
    }


def test_chaotic_runs_say_when_twins_decorrelate():
    verdict = point_verdict(summary(grew=7, ratio=0.95, exponent=0.43, saturation=688.0), 1000)
    assert verdict.startswith("chaotic: every seed is a new picture of the same kind")
    assert "decorrelate by step 690" in verdict and "e^0.43" in verdict


def test_chaotic_without_a_plateau_says_still_drifting():
    verdict = point_verdict(summary(grew=8, ratio=0.9, exponent=0.1), 201)
    assert verdict.startswith("chaotic") and "still drifting apart at step 201" in verdict


def test_twins_that_grow_but_stay_alike_are_anchored():
    verdict = point_verdict(summary(grew=6, ratio=0.35, exponent=0.2, saturation=150.0), 400)
    assert verdict.startswith("sensitive but anchored") and "35%" in verdict


def test_healed_twins_are_stable_and_silent_ones_give_no_verdict():
    assert point_verdict(summary(diverged=4, healed=3), 200).startswith("stable: 3 of 4")
    silent = point_verdict(summary(diverged=0), 200)
    assert silent.startswith("no verdict") and "by step 200" in silent


def test_neither_majority_is_mixed():
    assert point_verdict(summary(diverged=6, grew=3, healed=3), 200).startswith("mixed: of 6")


def test_plane_verdict_counts_unstable_points():
    document = {"points_compared": 4, "measured_unstable": 1, "plane": ["model.decay", "model.turn_angle"]}
    assert plane_verdict(document).startswith("chaotic at 1 of 4 points (25%)")
    assert plane_verdict({**document, "measured_unstable": 0}).startswith("stable everywhere")
    assert plane_verdict({**document, "points_compared": 0}).startswith("no verdict")


def test_the_printed_summary_ends_with_the_verdict():
    document = {
        "preset": "tiny",
        "seed": 1,
        "twins": ["agent", "trail"],
        "perturbed_at_step": 1,
        "steps": 10,
        "backend": "torch",
        "device": "cpu",
        "plane": ["model.decay", "model.turn_angle"],
        "threshold": 0.0,
        "points_compared": 4,
        "measured_unstable": 4,
        "linear_unstable": 4,
        "agreement": 1.0,
        "confusion": {
            "both_unstable": 4,
            "both_stable": 0,
            "model_only_unstable": 0,
            "measured_only_unstable": 0,
        },
    }
    assert summary_lines(document)[-1] != "verdict: " + plane_verdict(document)  # none in the document
    document["verdict"] = plane_verdict(document)
    assert (
        summary_lines(document)[-1]
        == "verdict: chaotic everywhere measured across model.decay x model.turn_angle; the heat map shows where the regimes meet"
    )
