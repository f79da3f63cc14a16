"""Raw fields out: a simulation's float32 trail and its agents' counts per cell at chosen steps
(output.fields), as .npz and as 16-bit greyscale PNG for image tools (docs/outputs.md, "Raw
fields").

<stem>-fields-<step>.npz holds:

    format          str     "physarum-fields"
    format_version  int64   FORMAT_VERSION
    preset          str     embedded_text(preset), the render's preset
    step            int64   the step (warmup included)
    trail           float32 [H, W] (with species: [S, H, W]), trail[y, x], the model's units
    counts          int32   [H, W] (with species: [S, H, W]), the agents standing in each cell

<stem>-fields-<step>.png (with species, -species<s>.png for each) holds round(65535 * T / max T)
of the trail T as 16-bit grey (0 everywhere for an empty map), with the preset in the `physarum`
text chunk and max T in `physarum-trail-max` (a float32, written as the shortest decimal that
reads back as it), so that T is about value / 65535 * max. The files are staged with the
render's other outputs and renamed with them, all or nothing; a file that cannot be written (a
full disk) takes the step's files staged before it with it.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, PngImagePlugin

from ...kernels.api import FRAC_BITS
from ..base.files import PartialFile, remove_stale_parts, stage
from ..formats.png import EMBED_KEY
from ..preset import Preset
from ..preset.provenance import embedded_text
from ..sim.checkpoint import write_members

FORMAT = "physarum-fields"
FORMAT_VERSION = 1
PNG_LEVELS = 65535
MAX_KEY = "physarum-trail-max"


def fields_steps(preset: Preset) -> frozenset[int]:
    fields = preset.output.fields
    return fields.steps(preset.end_step) if fields else frozenset()


def agent_counts(position: np.ndarray, height: int, width: int) -> np.ndarray:
    """[G, H, W] int32: how many agents of each group stand in each cell (position [G, 2, N]
    int32 16.16)."""
    cells = (position[:, 1] >> FRAC_BITS).astype(np.int64) * width + (position[:, 0] >> FRAC_BITS)
    counts = [np.bincount(group, minlength=height * width) for group in cells]
    return np.stack(counts).astype(np.int32).reshape(-1, height, width)


def png16(trail: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """([H, W] uint16 round(65535 * T / max T), max T) of one float32 map."""
    peak = np.float32(trail.max()) if trail.size else np.float32(0)
    if peak <= 0:
        return np.zeros(trail.shape, np.uint16), peak
    scaled = np.rint(trail.astype(np.float64) * (PNG_LEVELS / np.float64(peak)))
    return np.clip(scaled, 0, PNG_LEVELS).astype(np.uint16), peak


class FieldsStop:
    """The course's stop (render/sim/course.py) that writes each job's fields at its steps.

    jobs: the batch's jobs (out.job.Job: preset, index, paths, partials, error, fail);
    a job's files join its partials, renamed with its outputs or removed with them."""

    def __init__(self, jobs):
        self.jobs = [job for job in jobs if fields_steps(job.preset)]
        self.steps = frozenset().union(*(fields_steps(job.preset) for job in self.jobs))
        for job in self.jobs:
            remove_stale_parts(job.paths["json"].parent, f"{stem_of(job)}-fields-*")

    def __call__(self, simulation, step: int) -> None:
        jobs = [job for job in self.jobs if job.error is None and step in fields_steps(job.preset)]
        if not jobs:
            return
        state = simulation.state
        trail = state.trail.detach().cpu().numpy()
        position = state.position.detach().cpu().numpy()
        for job in jobs:
            species = job.preset.species_count
            groups = slice(job.index * species, (job.index + 1) * species)
            try:
                job.partials.extend(write_fields(job, step, trail[groups], position[groups]))
            except OSError as error:
                job.fail(error)


def stem_of(job) -> str:
    return job.paths["json"].stem


def write_fields(job, step: int, trail: np.ndarray, position: np.ndarray) -> list[PartialFile]:
    """One job's field files of `step` under their temporary names (trail [S, H, W])."""
    preset: Preset = job.preset
    folder, stem = job.paths["json"].parent, stem_of(job)
    text = embedded_text(preset)
    counts = agent_counts(position, preset.canvas.height, preset.canvas.width)
    plain = preset.species is None  # one map: [H, W], as simulation_maps gives it
    staged: list[PartialFile] = []
    try:
        if "npz" in preset.output.fields.formats:
            members = {
                "format": np.array(FORMAT),
                "format_version": np.array(FORMAT_VERSION, np.int64),
                "preset": np.array(text),
                "step": np.array(step, np.int64),
                "trail": trail[0] if plain else trail,
                "counts": counts[0] if plain else counts,
            }
            staged.append(stage(folder / f"{stem}-fields-{step}.npz", lambda f: write_members(f, members)))
        if "png" in preset.output.fields.formats:
            for s in range(len(trail)):
                name = f"{stem}-fields-{step}.png" if plain else f"{stem}-fields-{step}-species{s}.png"
                staged.append(stage(folder / name, lambda f, map_=trail[s]: save_png16(f, map_, text)))
    except BaseException:  # a later file failed (a full disk): the earlier ones' temporaries go too
        for partial in staged:
            partial.abort()
        raise
    return staged


def save_png16(file, trail: np.ndarray, text: str) -> None:
    """A trail map [H, W] float32 as a 16-bit greyscale PNG (png16), the preset and max T in
    text chunks."""
    values, peak = png16(trail)
    info = PngImagePlugin.PngInfo()
    info.add_itxt(EMBED_KEY, text)
    info.add_text(MAX_KEY, str(peak))  # numpy's shortest decimal that reads back as this float32
    Image.fromarray(values).save(file, format="PNG", pnginfo=info)
