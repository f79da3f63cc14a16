"""`physarum sensitivity`: how fast the smallest possible perturbations grow, measured exactly.

A run is a base simulation and twins that differ from it by one perturbation each, all advanced
as one batched simulation (B = points x (1 + twins)); the model is batch-independent and exact,
so any difference between a twin and its base comes from the perturbation and nothing else.
docs/sensitivity.md gives the method, the rules and their reasons; in short:

- an *agent* twin has one agent moved by one 16.16 unit in x (1/65536 px); a one-unit shift only
  matters when it takes the agent across a cell boundary, so the agent is chosen among those that
  do within a short look-ahead of the base run;
- a *trail* twin has one trail cell raised to the next trail value: one float32 ulp up
  (torch.nextafter), or from 0 to TRAIL_FLOOR, the smallest value the model keeps; that only
  matters when it breaks a tie in some agent's steering, so the cell is chosen among those that
  change a sensing agent's turn at the next step (a "decisive" cell);
- per step, each twin's divergence from its base: the normalised L1 distance of the trails, their
  Pearson correlation, and the mean torus distance of same-index agents;
- a finite-time Lyapunov exponent: the slope of ln(L1) over the exponential window, which opens
  when the divergence first exceeds its initial value and closes when it reaches
  WINDOW_FRACTION of the decorrelated level (the L1 distance between the base and itself shifted
  by half the canvas); mean and standard error over twins;
- the saturation step: the first step at which the divergence reaches SATURATION_LEVEL of its
  plateau (the mean of the last fifth of the run), when the run has one (it grew less than
  PLATEAU_GROWTH across that last fifth).

Planes (`--plane KEY=LO:HI:N KEY=LO:HI:N`) measure the exponent over a grid of two model
parameters and compare it with the seed's linearised 2x2 model (`LinearModel`).

The modules, in the order data flows through them (each imports only those before it):
twins (choosing and perturbing twins), metrics (divergence per step), batch (running twins in
memory-sized chunks), fit (exponents, saturation, each twin's results), linear (the 2x2 model),
plane (axes, one preset per point, the plane's verdicts), report (CSV, JSON, printed lines),
figures (plots), commands (sensitivity, sensitivity_plane); errors holds AnalysisError. This
package re-exports their public names.
"""

from __future__ import annotations

from .batch import MEMORY_SHARE, RunOptions, points_per_chunk, run_twins
from .commands import sensitivity, sensitivity_plane
from .errors import AnalysisError
from .figures import plot_divergence, plot_plane
from .fit import (
    MIN_FIT_POINTS,
    PLATEAU_GROWTH,
    SATURATION_LEVEL,
    WINDOW_FRACTION,
    ExponentFit,
    TwinResult,
    analyse_point,
    fit_exponent,
    mean_and_error,
    perturbed,
    saturation_index,
)
from .linear import (
    LinearModel,
    agent_density,
    eigenvalues,
    linear_model,
    preset_linear_model,
)
from .metrics import METRICS, TwinSeries, divergence
from .plane import (
    GROWTH_THRESHOLD,
    PLANE_KEYS,
    PlaneAxis,
    PlaneResult,
    analyse_plane,
    parse_plane_axis,
    plane_presets,
)
from .report import (
    json_number,
    linear_record,
    output_paths,
    plane_record,
    plus_minus,
    run_header,
    summarise,
    summary_lines,
    twin_record,
    write_plane_csv,
    write_twin_csv,
)
from .twins import (
    KINDS,
    LOOKAHEAD_STEPS,
    PERTURBING_KINDS,
    Twin,
    agent_positions,
    choose_agent_twins,
    choose_trail_twins,
    decisive_cells,
    perturb,
    raise_trail,
    sensor_cells,
    twin_kinds,
)

__all__ = [
    "AnalysisError",
    "PERTURBING_KINDS",
    "KINDS",
    "LOOKAHEAD_STEPS",
    "Twin",
    "twin_kinds",
    "sensor_cells",
    "raise_trail",
    "decisive_cells",
    "choose_trail_twins",
    "agent_positions",
    "choose_agent_twins",
    "perturb",
    "METRICS",
    "divergence",
    "TwinSeries",
    "MEMORY_SHARE",
    "RunOptions",
    "run_twins",
    "points_per_chunk",
    "WINDOW_FRACTION",
    "SATURATION_LEVEL",
    "PLATEAU_GROWTH",
    "MIN_FIT_POINTS",
    "ExponentFit",
    "fit_exponent",
    "saturation_index",
    "mean_and_error",
    "TwinResult",
    "perturbed",
    "analyse_point",
    "LinearModel",
    "eigenvalues",
    "linear_model",
    "agent_density",
    "preset_linear_model",
    "GROWTH_THRESHOLD",
    "PLANE_KEYS",
    "PlaneAxis",
    "parse_plane_axis",
    "plane_presets",
    "PlaneResult",
    "analyse_plane",
    "output_paths",
    "write_twin_csv",
    "write_plane_csv",
    "summarise",
    "json_number",
    "run_header",
    "twin_record",
    "linear_record",
    "plane_record",
    "plus_minus",
    "summary_lines",
    "plot_divergence",
    "plot_plane",
    "sensitivity",
    "sensitivity_plane",
]
