"""The plain-language verdict that closes `physarum sensitivity`: what its numbers mean for
someone choosing seeds (docs/sensitivity.md, section 2.5).

A point's verdict reads the summary of all its twins (report.summarise): how many twins'
perturbations showed at all (`diverged`), how many of those grew to 10^-2 of the decorrelated
level (`grew`) or healed back to identical (`healed`), the plateau ratio (final L1 over the
decorrelated level: 1 is as different as an unrelated run) and the saturation step. A plane's
verdict reads its counts of unstable points. The thresholds are named constants, so the words
follow the numbers printed beside them.
"""

from __future__ import annotations

MAJORITY = 0.5  # a share of the twins that showed: more than this decides the kind
DECORRELATED = 0.8  # a plateau ratio at least this: the twins end as unrelated runs do


def point_verdict(summary: dict, last_step: int) -> str:
    """One sentence for one preset's twins (`summary`: report.summarise's document, `last_step`:
    the step the twins were run to)."""
    group = summary["all"]
    shown, grew, healed = group["diverged"], group["grew"], group["healed"]
    ratio = group["plateau_ratio"]["mean"]
    exponent = group["exponent"]["mean"]
    if shown == 0:
        return (
            f"no verdict: no twin's perturbation changed the run by step {last_step} (they stayed "
            "silent); perturb earlier (--at 1) or run longer (--steps)"
        )
    if grew > MAJORITY * shown:
        rate = "" if exponent is None else f" (at first by e^{exponent:.2f} a step)"
        if ratio is not None and ratio >= DECORRELATED:
            saturation = group["saturation_step"]
            when = (
                f"twins decorrelate by step {_round_step(saturation['mean'])}"
                if saturation["n"]
                else f"twins are still drifting apart at step {last_step}"
            )
            return f"chaotic: every seed is a new picture of the same kind; {when}{rate}"
        share = "an unknown share" if ratio is None else f"{ratio:.0%}"
        return (
            f"sensitive but anchored: twins drift apart{rate} yet end {share} as different as "
            "unrelated runs; a seed changes the details more than the layout"
        )
    if healed > MAJORITY * shown:
        return (
            f"stable: {healed} of {shown} perturbations healed back to the same picture; "
            "small nudges do not change what this preset makes"
        )
    return (
        f"mixed: of {shown} perturbations that showed, {grew} grew and {healed} healed; "
        "the run is on the edge between stable and chaotic"
    )


def plane_verdict(document: dict) -> str:
    """One sentence for a parameter plane: where its points are unstable."""
    measured, unstable = document["points_compared"], document["measured_unstable"]
    first, second = document["plane"]
    if measured == 0:
        return "no verdict: no point of the plane had a measured exponent"
    share = unstable / measured
    if share == 0:
        kind = "stable everywhere measured"
    elif share == 1:
        kind = "chaotic everywhere measured"
    else:
        kind = f"chaotic at {unstable} of {measured} points ({share:.0%})"
    return f"{kind} across {first} x {second}; the heat map shows where the regimes meet"


def _round_step(step: float) -> int:
    """A mean step as a reader would say it: to 2 significant digits (700, 1300, 45)."""
    step = max(1, round(step))
    digits = len(str(step)) - 2
    return step if digits <= 0 else round(step, -digits)
