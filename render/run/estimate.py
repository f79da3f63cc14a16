"""How long a render's simulation will take, said before a long one starts.

The cost of a step is about linear in the agents and the cells: seconds = steps x (agents x
AGENT_S + cells x CELL_S), with constants per kind of machine (THROUGHPUT). The CPU's were
measured on the 2-core machine of docs/benchmarks.md: labyrinth (2,000,000 agents, 1024^2, 1500
steps) took 317 s with the torch backend, about 0.21 s a step, which these constants give; small
canvases run faster per agent (they stay in cache: labyrinth's 256^2 preview, 125,000 agents,
took 5.6 s of simulation where the constants say 20 s), so the estimate errs long, never short
by much. The GPU's are the H200 bench figures (Triton: 4.8e10 agent-steps a second on L; the
eager torch step 20 times slower). Encoding is not counted: it runs beside the simulation.
"""

from __future__ import annotations

from physarum.render.preset import Preset

SHOWN_FROM_S = 60.0  # an estimate at or above this is said before the render
# (device type, backend) -> (seconds per agent-step, seconds per cell-step)
THROUGHPUT = {
    ("cpu", "torch"): (7e-8, 7e-8),
    ("cuda", "triton"): (2.1e-11, 1e-11),
    ("cuda", "torch"): (4.2e-10, 2e-10),
}


def render_seconds(preset: Preset, device_type: str, backend: str) -> float | None:
    """The estimated seconds of the preset's simulation (warmup and steps), or None for a machine
    THROUGHPUT does not know."""
    constants = THROUGHPUT.get((device_type, backend))
    if constants is None:
        return None
    agent_s, cell_s = constants
    cells = preset.canvas.width * preset.canvas.height * (preset.canvas.depth or 1) * preset.species_count
    return preset.end_step * (preset.agents.count * agent_s + cells * cell_s)


def estimate_line(preset: Preset, device_type: str, backend: str) -> str | None:
    """The line said before a render estimated at SHOWN_FROM_S or more, else None."""
    seconds = render_seconds(preset, device_type, backend)
    if seconds is None or seconds < SHOWN_FROM_S:
        return None
    minutes = seconds / 60
    shown = f"{minutes:.0f} minutes" if minutes < 120 else f"{minutes / 60:.1f} hours"
    return (
        f"note: this render is estimated at about {shown} on this {device_type} ({backend}): "
        f"{preset.agents.count:,} agents on {preset.canvas.width}x{preset.canvas.height} for "
        f"{preset.end_step:,} steps; --preview renders the same picture smaller in seconds"
    )
