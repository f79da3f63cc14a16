"""Keyframed parameters in a running simulation: the backend retuned wherever a schedule changes.

A batch whose presets schedule any value (render/preset/schedule.py) runs behind a
KeyframedSimulation: before each step it asks what the presets' schedules give there, and only
where that differs from what the backend steps with does it build new tables (the model's
parameters, kernels/exact.build_tables) or a new world (interaction weights, food maps) and hand
them over (api.Simulation.retune). Between such steps the backend advances in long runs, so the
Triton backend replays its CUDA graphs (which retune keeps). Values are evaluated exactly on the
host, so every backend and machine steps with the same bits.
"""

from __future__ import annotations

from fractions import Fraction

import torch

from ...kernels import api
from ...kernels.exact import build_tables, coefficients, degrees_to_heading
from ..preset.schedule import Resolved, next_change, value_at
from ..world.maps import food_amounts, group_food, interaction_mix


def describe(preset) -> dict:
    """The sidecar's `schedules`: each scheduled key's easing and its keyframes as [step, value]
    (percentages resolved to steps; values as written); a key resolved from a soundtrack or a
    periodic shape, what it follows and its curve's digest (schedule.Resolved.described)."""
    return {
        path: schedule.described()
        if isinstance(schedule, Resolved)
        else {
            "ease": schedule.ease,
            "keyframes": [[step, float(value)] for step, value in schedule.resolved(preset.end_step)],
        }
        for path, schedule in preset.schedules
    }


def table_values(params: api.ModelParams) -> tuple:
    """What build_tables makes of a group's parameters: equal values give equal tables."""
    return (
        degrees_to_heading(params.sensor_angle),
        degrees_to_heading(params.turn_angle),
        params.sensor_distance,
        params.step_size,
        coefficients(params),
        params.seed,
    )


class KeyframedSimulation:
    """A backend's simulation (api.Simulation) whose parameters follow the presets' schedules.

    presets: the batch's presets, in group order (each has S species); step: the step the state
    stands at (0, or a checkpoint's). The backend was built with the values of `step`."""

    def __init__(self, simulation, presets, step: int):
        self.simulation, self.presets, self.step = simulation, list(presets), step
        self.name, self.phases, self.dims = simulation.name, simulation.phases, simulation.dims
        self._schedules = self._of("")
        self._mix_schedules, self._food_schedules = self._of("interaction"), self._of("world.food")
        self._tuned = self._values(self._params(step), step)
        self.retunes = 0  # how many times the backend was handed new tables, weights or food

    def follow(self, presets) -> None:
        """Step from now on by these presets' schedules (the live studio's presets, whose
        schedules grow as the page changes them: render/live/session.py). Their values before
        the current step must be those already stepped with; the backend is retuned at the next
        step where its values differ from what it steps with now."""
        self.presets = list(presets)
        self._schedules = self._of("")
        self._mix_schedules, self._food_schedules = self._of("interaction"), self._of("world.food")

    def _of(self, prefix: str) -> list:
        """(the run's last step, schedule) of every schedule under a key prefix, preset by preset."""
        return [
            (p.end_step, s)
            for p in self.presets
            for path, s in p.simulation_schedules
            if path.startswith(prefix)
        ]

    def _params(self, step: int) -> list[api.ModelParams]:
        return [p.model_params(s, step) for p in self.presets for s in range(p.species_count)]

    def _values(
        self, params: list[api.ModelParams], step: int
    ) -> tuple[list, list[Fraction], list[Fraction]]:
        """What the backend steps with at `step`: each group's table values (table_values), then
        every scheduled interaction weight and every scheduled food amount, exact."""
        return (
            [table_values(p) for p in params],
            [value_at(schedule, step, end) for end, schedule in self._mix_schedules],
            [value_at(schedule, step, end) for end, schedule in self._food_schedules],
        )

    def _next_change(self) -> int | None:
        changes = [next_change(s, self.step, end) for end, s in self._schedules]
        return min((c for c in changes if c is not None), default=None)

    def _retune(self) -> None:
        """Hand the backend what changes at the current step, and only that: the tables where
        their integers or float32 coefficients change (an angle's ramp changes its heading steps
        only every few steps), the interaction where a weight does, the food maps where an amount
        does (rebuilt on the host, so only then)."""
        params = self._params(self.step)
        values = self._values(params, self.step)
        if values == self._tuned:
            return
        (_, mix, food), (_, mix_then, food_then) = values, self._tuned
        self.simulation.retune(
            build_tables(params),
            interaction_mix(self.presets, self.step) if mix != mix_then else None,
            group_food(self.presets, [food_amounts(p, self.step) for p in self.presets])
            if food != food_then
            else None,
        )
        self._tuned = values
        self.retunes += 1

    def advance(self, steps: int) -> None:
        """Advance `steps` steps, retuning the backend at each step where a value changes."""
        end = self.step + steps
        while self.step < end:
            self._retune()
            change = self._next_change()
            reach = end if change is None else min(end, change)
            self.simulation.advance(reach - self.step)
            self.step = reach

    def eager_step(self) -> None:
        self._retune()
        self.simulation.eager_step()
        self.step += 1

    def profiled_step(self, phase: api.Phase) -> None:
        self._retune()
        self.simulation.profiled_step(phase)
        self.step += 1

    def retune(self, tables: api.Tables, mix=None, food=None) -> None:
        self.simulation.retune(tables, mix, food)

    @property
    def state(self) -> api.State:
        return self.simulation.state

    @property
    def trail(self) -> torch.Tensor:
        return self.simulation.trail

    @property
    def agents(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.simulation.agents

    def unusable_on(self, device: torch.device) -> str | None:
        return self.simulation.unusable_on(device)

    def device_bytes(self, agents: int) -> tuple[float, float]:
        return self.simulation.device_bytes(agents)
