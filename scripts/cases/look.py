"""Cases of colouring a frame: the auto level's selection and the index frame (colour), the flat
colourist against the HDR look (look), the 3D volume renderer (volume).

    python -m physarum.render.tools.harness case colour look volume     # on the H200: 4-6 minutes
    python -m physarum.render.tools.harness case colour --device cpu --sizes 256x256
"""

from __future__ import annotations

import hashlib

from physarum.render.tools.harness import case

FIELDS = ((21, 1024), (10, 2048), (0, 1024))  # (shift, bins) of the radix select's passes


def radix_select(flat, k: int):
    """The k-th smallest of float32 values >= 0 by integer histograms of their bit patterns (a
    non-negative float32's int32 pattern orders like the float): one bincount per field, the
    candidates narrowed to the field's digit that holds rank k. Exact; syncs with the host."""
    import torch

    keys = flat.reshape(-1).view(torch.int32)
    rank = k
    for shift, bins in FIELDS:
        digit = (keys >> shift) & (bins - 1)
        counts = torch.bincount(digit, minlength=bins)
        cum = counts.cumsum(0)
        d = int(torch.searchsorted(cum, torch.tensor([rank], device=cum.device)))
        rank -= int(cum[d] - counts[d])
        keys = keys[digit == d]
    return keys[:1].view(torch.float32)[0]


def filaments(height: int, width: int, device):
    """Thin bright filaments (the zero set of a smooth noise) over a faint background: about half
    the cells under 1e-3, shaped like a real trail."""
    import torch

    g = torch.Generator().manual_seed(26)
    coarse = torch.rand(1, 1, max(2, height // 48), max(2, width // 48), generator=g) * 2 - 1
    noise = torch.nn.functional.interpolate(coarse, size=(height, width), mode="bilinear")[0, 0]
    ridge = (1 - noise.abs() / 0.03).clamp(min=0) ** 2 * 30
    background = torch.rand(height, width, generator=g) ** 6 * 2e-3
    return (ridge + background).to(torch.float32).to(device)


def panorama_trail(height: int, width: int, steps: int, device):
    """panorama's trail after `steps` steps at the size (agents scaled by area)."""
    from physarum.render.preset import load_preset
    from physarum.render.preset.catalog import resolve_preset_path
    from physarum.render.sim.simulation import advance, make_simulation

    agents = max(1000, round(5_000_000 * height * width / (3840 * 2160)))
    settings = [f"canvas.width={width}", f"canvas.height={height}", f"agents.count={agents}"]
    preset = load_preset(resolve_preset_path("panorama"), settings)
    simulation = make_simulation(preset, "triton" if device.type == "cuda" else "torch", device)
    advance(simulation, steps)
    return simulation.trail[0].clone()


@case(
    "colour",
    device="",
    sizes="1024x1024,3840x2160",
    trail="synthetic",
    steps=200,
    reps=10,
    small={"sizes": "256x256", "reps": 3},
)
def colour_frame(run) -> None:
    """Colouring cost per frame (issue 26): the candidates for the auto level's quantile, each
    checked bit for bit against kthvalue, and the palette indices by bucketize and by the Triton
    kernel on CUDA (kthvalue: the old auto_high; sort; topk of the smaller
    side: the GPU path of render/look/select.py; np.partition: its CPU path; an integer-histogram
    radix select: the rejected candidate; auto_high as it is now), Colourist.index_frame with the
    old and the new auto_high (index frames compared) and Colourist.colour (index and RGB), with
    panorama's palette. The trail: synthetic filaments, or (--trail sim) panorama's own after
    --steps steps (slow on a CPU)."""
    import torch

    from physarum.render.look import colour, select
    from physarum.render.look.colour import Colourist
    from physarum.render.preset import Palette

    device = torch.device(run.device)
    palette = Palette(
        names=["ice", "ocean"], every=150, gamma=0.7, levels={"low": 0, "high": "auto", "quantile": 0.99}
    )

    def old_auto_high(trail, quantile: float):
        flat = trail.reshape(-1)
        return torch.kthvalue(flat, select.quantile_rank(flat.numel(), quantile)).values

    for size in run.sizes.split(","):
        height, width = (int(v) for v in size.lower().split("x"))
        if run.trail == "sim":
            trail = panorama_trail(height, width, run.steps, device)
        else:
            trail = filaments(height, width, device)
        flat = trail.reshape(-1)
        k = select.quantile_rank(trail.numel(), 0.99)
        expected = torch.kthvalue(flat, k).values.view(torch.int32).item()
        found = {
            "kthvalue (old auto_high)": lambda: torch.kthvalue(flat, k).values,
            "sort": lambda: torch.sort(flat).values[k - 1],
            "topk smaller side": lambda: select._topk(flat, k),
            "radix histograms (bincount)": lambda: radix_select(flat, k),
            "auto_high (new)": lambda: colour.auto_high(trail, 0.99),
        }
        if device.type == "cpu":
            found["np.partition"] = lambda: select._partition(flat, [k])[0]
        for name, fn in found.items():
            slow = name.startswith("kthvalue") or device.type == "cpu"
            value = fn()
            exact = value.view(torch.int32).item() == expected
            run.measure(
                f"{size} select {name}", fn, repeats=max(1, run.reps // 4) if slow else run.reps, exact=exact
            )
        if device.type == "cuda":
            from physarum.render.look.colour_kernel import palette_indices

            bounds = torch.sort(torch.rand(255, device=device) * float(trail.max())).values
            torch_indices = torch.bucketize(trail, bounds, right=True).to(torch.uint8)
            run.measure(
                f"{size} indices bucketize (torch)",
                lambda: torch.bucketize(trail, bounds, right=True).to(torch.uint8),
                repeats=run.reps,
            )
            run.measure(
                f"{size} indices palette_indices (Triton)",
                lambda: palette_indices(trail, bounds),
                repeats=run.reps,
                same_indices=bool(torch.equal(palette_indices(trail, bounds), torch_indices)),
            )
        fresh = Colourist(palette)
        new_index = fresh.index_frame(trail)
        run.measure(f"{size} index_frame new", lambda: fresh.index_frame(trail), repeats=run.reps)
        saved = colour.auto_high
        colour.auto_high = old_auto_high
        try:
            old_index = fresh.index_frame(trail)
            run.measure(
                f"{size} index_frame old", lambda: fresh.index_frame(trail), repeats=max(1, run.reps // 4)
            )
        finally:
            colour.auto_high = saved
        run.measure(
            f"{size} colour (index + RGB)",
            lambda: fresh.colour(trail, 0),
            repeats=run.reps,
            same_index_frames=bool(torch.equal(old_index, new_index)),
            cells_below_1e_3=round(float((trail < 1e-3).float().mean()), 4),
            trail=run.trail,
        )


LOOKS = {
    "flat": None,
    "look-light": {"curve": "aces"},
    "look-full": {
        "curve": "aces",
        "bloom": 2.0,
        "bloom_radius": 0.06,
        "vignette": 0.4,
        "grain": 0.03,
        "black": 0.2,
    },
}


@case("look", device="", sizes="1024x1024,3840x2160", small={"sizes": "256x256"})
def look(run) -> None:
    """Colouring ms/frame, the flat colourist (levels high: auto) against a light look (tone curve
    and dithering) and a full HDR look (bloom, vignette, grain, black point; render/look/hdr.py):
    Colourist.colour of a heavy-tailed synthetic trail, index and RGB frames; two warm-up frames
    (constants copied, kernels loaded), median of the repeats (20 by default)."""
    import torch

    from physarum.render.look.colour import make_colourist
    from physarum.render.preset.load import build_preset

    device = torch.device(run.device)
    for size in run.sizes.split(","):
        width, height = (int(v) for v in size.split("x"))
        generator = torch.Generator().manual_seed(1)
        noise = torch.rand(height, width, generator=generator, dtype=torch.float32)
        trail = ((-torch.log1p(-noise * 0.999)) ** 3).to(device)
        for name, settings in LOOKS.items():
            data = {
                "name": "bench",
                "canvas": {"width": width, "height": height},
                "palette": {"names": ["magma"], "gamma": 0.8, "levels": {"high": "auto", "quantile": 0.995}},
            }
            if settings is not None:
                data["look"] = settings
            colourist = make_colourist(build_preset(data, "bench.yaml"))
            frame = iter(range(10**9))
            run.measure(
                f"{size} {name}", lambda: colourist.colour(trail, next(frame), True), repeats=20, warmup=2
            )


def tubes(side: int, device):
    """[side]^3 float32: three Gaussian tubes and a faint haze, a stand-in for a trail."""
    import torch

    axis = torch.arange(side, device=device, dtype=torch.float32)
    z, y, x = axis[:, None, None], axis[None, :, None], axis[None, None, :]
    c, w = side / 2, side / 16
    trail = torch.exp(-((x - c) ** 2 + (y - c) ** 2) / (2 * w * w))
    trail = trail + torch.exp(-((y - 0.6 * c) ** 2 + (z - c) ** 2) / (2 * w * w))
    trail = trail + torch.exp(-((x - 1.4 * c) ** 2 + (z - 0.7 * c) ** 2) / (2 * w * w))
    return trail + 0.01


@case(
    "volume",
    device="",
    sides="256,512",
    size=1024,
    frames=3,
    modes="nearest,trilinear",
    paths="kernel,torch",
    identity=128,
    small={"sides": "32", "size": 128, "frames": 2},
)
def volume(run) -> None:
    """The volume renderer's cost (render/look/volume.py): ms per frame at SIZE^2 from 256^3 and
    512^3 synthetic trail volumes, nearest and trilinear, the Triton kernel (CUDA only) and the
    torch code; the GIF palette's share (reduce_rgb) and the samples per second; on CUDA, byte
    identity of CPU and CUDA frames at a medium volume (IDENTITY; 0: none)."""
    import torch

    from physarum.render.look.camera import default_samples, view
    from physarum.render.look.colour import Colourist
    from physarum.render.look.volume import alpha_table, reduce_rgb, render_volume
    from physarum.render.preset.camera import Camera
    from physarum.render.preset.output_sections import Palette

    device = torch.device(run.device)
    colourist = Colourist(Palette())
    colours = torch.from_numpy(colourist.table(0)).to(device)
    for side in map(int, run.sides.split(",")):
        levels = colourist.index_frame(tubes(side, device))
        for mode in run.modes.split(","):
            for path in run.paths.split(","):
                if path == "kernel" and device.type != "cuda":
                    continue
                camera = Camera.model_validate(
                    {"orbit": {"turns": 1, "elevation": 20}, "opacity": 0.1, "sample": mode}
                )
                alpha = torch.from_numpy(alpha_table(camera)).to(device)
                frame = iter(range(10**9))
                views = {}

                def render(kernel=path == "kernel"):
                    number = next(frame) % (run.frames + 1)
                    v = view(camera, tuple(levels.shape), (run.size, run.size), number, run.frames)
                    views["image"] = render_volume(levels, v, colours, alpha, (0, 0, 0), mode, kernel=kernel)

                per_ray = default_samples((side, side, side))  # camera.samples unset: the diagonal
                timing = run.measure(
                    f"{side}^3 to {run.size}^2 {mode} {path} render", render, repeats=run.frames, warmup=1
                )
                run.measure(
                    f"{side}^3 to {run.size}^2 {mode} {path} reduce_rgb",
                    lambda: reduce_rgb(views["image"]),
                    repeats=run.frames,
                    warmup=1,
                    samples_per_ray=per_ray,
                    gsamples_per_s=round(run.size * run.size * per_ray / timing.median / 1e6, 3),
                )
        del levels
    if device.type != "cuda" or not run.identity:
        return
    trail = tubes(run.identity, torch.device("cpu"))
    levels = colourist.index_frame(trail)
    colours = torch.from_numpy(colourist.table(0))
    for mode in ("nearest", "trilinear"):
        camera = Camera.model_validate(
            {"orbit": {"turns": 1, "elevation": 30}, "opacity": 0.1, "sample": mode}
        )
        alpha = torch.from_numpy(alpha_table(camera))
        digests = {"cpu": hashlib.sha256(), "cuda": hashlib.sha256()}
        for number in range(4):
            v = view(camera, tuple(levels.shape), (256, 192), number, 4)
            for name, where in (("cpu", torch.device("cpu")), ("cuda", device)):
                image = render_volume(
                    levels.to(where), v, colours.to(where), alpha.to(where), (3, 2, 1), mode
                )
                index, palette = reduce_rgb(image)
                digests[name].update(
                    image.cpu().numpy().tobytes() + index.cpu().numpy().tobytes() + palette.tobytes()
                )
        same = digests["cpu"].digest() == digests["cuda"].digest()
        run.record(f"identity {run.identity}^3 {mode} cpu vs cuda", same_bytes=same, failed=not same)
