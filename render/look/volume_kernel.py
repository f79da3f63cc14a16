"""The volume renderer as one Triton kernel: the integer recipe of render/look/volume.py (its
module docstring, steps 3 to 5) with a ray per lane and every sample in registers, the same
bytes as the PyTorch code (tests/test_look_volume_kernel.py, in Triton's interpreter; the GPU
test compares on CUDA). volume.render_volume calls it for levels on a CUDA device where Triton
is installed; the directions (a floor division, which Triton's // does not do) come in from
volume.ray_directions.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 128  # rays a program


@triton.jit
def _level(padded_ptr, x, y, z, width, height, depth, mask):
    """int32 level of voxels (x, y, z) (int32) from the levels padded by one empty voxel (index
    + 1, clamped to the padding outside; below 2^31: a side is at most limits.MAX_SIDE_3D)."""
    x = tl.minimum(tl.maximum(x, -1), width) + 1
    y = tl.minimum(tl.maximum(y, -1), height) + 1
    z = tl.minimum(tl.maximum(z, -1), depth) + 1
    index = (z * (height + 2) + y) * (width + 2) + x
    return tl.load(padded_ptr + index, mask=mask, other=0).to(tl.int32)


@triton.jit
def _near(p, side):
    """A 16.16 position (int64) clamped to [-2, side + 2] voxels, as int32. Every voxel that a
    position outside that range samples (nearest, or the 8 of trilinear) lies outside the volume,
    level 0, and so do those of the clamped one: the sample is the same, in 32-bit arithmetic."""
    return tl.minimum(tl.maximum(p, -2 * 65536), (side + 2) * 65536).to(tl.int32)


@triton.jit
def _trilinear(padded_ptr, px, py, pz, width, height, depth, mask):
    """The 8 voxels round (px, py, pz) (int32 16.16, voxel centres at integers after - 0.5)
    weighted by 8-bit fractions, rounded: (sum + 2^23) >> 24. The weights of a sample add up to
    2^24, so the sum of weight x level (<= 255 x 2^24, plus 2^23) fits in uint32."""
    sx, sy, sz = px - 32768, py - 32768, pz - 32768
    bx, by, bz = sx >> 16, sy >> 16, sz >> 16
    fx, fy, fz = (sx & 65535) >> 8, (sy & 65535) >> 8, (sz & 65535) >> 8
    total = tl.zeros(px.shape, tl.uint32)
    for corner in tl.static_range(8):
        cx = corner & 1
        cy = (corner >> 1) & 1
        cz = (corner >> 2) & 1
        wx = fx * cx + (256 - fx) * (1 - cx)
        wy = fy * cy + (256 - fy) * (1 - cy)
        wz = fz * cz + (256 - fz) * (1 - cz)
        level = _level(padded_ptr, bx + cx, by + cy, bz + cz, width, height, depth, mask)
        total += (wx * wy * wz).to(tl.uint32) * level.to(tl.uint32)
    return ((total + 8388608) >> 24).to(tl.int32)


@triton.jit
def _march_kernel(
    padded_ptr,
    directions_ptr,
    depths_ptr,
    alpha_ptr,
    colours_ptr,
    out_ptr,
    pixels,
    samples,
    ox,
    oy,
    oz,
    width,
    height,
    depth,
    back_r,
    back_g,
    back_b,
    gain,
    TRILINEAR: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """One ray a lane. Positions are int64 until clamped (_near); the rest is int32: alpha <=
    2^12 times light <= 2^16, and a channel's sum of colour (<= 255) x weight, whose weights add
    up to at most 2^16, stays under 2^24. Only the last step (x gain) is int64 again."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < pixels
    dx = tl.load(directions_ptr + offsets, mask=mask, other=0)
    dy = tl.load(directions_ptr + pixels + offsets, mask=mask, other=0)
    dz = tl.load(directions_ptr + 2 * pixels + offsets, mask=mask, other=0)
    light = tl.full([BLOCK], 65536, tl.int32)
    red = tl.zeros([BLOCK], tl.int32)
    green = tl.zeros([BLOCK], tl.int32)
    blue = tl.zeros([BLOCK], tl.int32)
    for k in range(samples):
        s = tl.load(depths_ptr + k)
        px = _near(ox + ((s * dx) >> 16), width)
        py = _near(oy + ((s * dy) >> 16), height)
        pz = _near(oz + ((s * dz) >> 16), depth)
        if TRILINEAR:
            level = _trilinear(padded_ptr, px, py, pz, width, height, depth, mask)
        else:
            level = _level(padded_ptr, px >> 16, py >> 16, pz >> 16, width, height, depth, mask)
        weight = (tl.load(alpha_ptr + level, mask=mask, other=0).to(tl.int32) * light) >> 12
        light -= weight
        red += tl.load(colours_ptr + level * 3, mask=mask, other=0).to(tl.int32) * weight
        green += tl.load(colours_ptr + level * 3 + 1, mask=mask, other=0).to(tl.int32) * weight
        blue += tl.load(colours_ptr + level * 3 + 2, mask=mask, other=0).to(tl.int32) * weight
    lit = light.to(tl.int64)
    red = (((red.to(tl.int64) * gain) >> 8) + back_r * lit + 32768) >> 16
    green = (((green.to(tl.int64) * gain) >> 8) + back_g * lit + 32768) >> 16
    blue = (((blue.to(tl.int64) * gain) >> 8) + back_b * lit + 32768) >> 16
    tl.store(out_ptr + offsets * 3, tl.minimum(red, 255).to(tl.uint8), mask=mask)
    tl.store(out_ptr + offsets * 3 + 1, tl.minimum(green, 255).to(tl.uint8), mask=mask)
    tl.store(out_ptr + offsets * 3 + 2, tl.minimum(blue, 255).to(tl.uint8), mask=mask)


def march(
    padded: torch.Tensor,
    grid: tuple[int, int, int],
    directions: torch.Tensor,
    v,
    colours: torch.Tensor,
    alpha: torch.Tensor,
    background: tuple[int, int, int],
    trilinear: bool,
    gain: int,
) -> torch.Tensor:
    """[H, W, 3] uint8 of view v (render/look/camera.View): padded levels (flat uint8),
    directions [3, P] int64, colours [256, 3] and alpha [256] int64, all on one device."""
    depth, height, width = grid
    pixels = directions.shape[1]
    device = padded.device
    out = torch.empty((pixels, 3), dtype=torch.uint8, device=device)
    depths = torch.tensor(v.depths, dtype=torch.int64, device=device)
    _march_kernel[(triton.cdiv(pixels, BLOCK),)](
        padded,
        directions.contiguous(),
        depths,
        alpha.contiguous(),
        colours.contiguous(),
        out,
        pixels,
        len(v.depths),
        *v.origin,
        width,
        height,
        depth,
        *background,
        gain,
        TRILINEAR=trilinear,
        BLOCK=BLOCK,
    )
    return out.reshape(v.size[1], v.size[0], 3)


SIGNATURE = {
    "padded_ptr": "*u8",
    "directions_ptr": "*i64",
    "depths_ptr": "*i64",
    "alpha_ptr": "*i64",
    "colours_ptr": "*i64",
    "out_ptr": "*u8",
    "pixels": "i32",
    "samples": "i32",
    "ox": "i64",
    "oy": "i32",
    "oz": "i64",
    "width": "i32",
    "height": "i32",
    "depth": "i32",
    "back_r": "i32",
    "back_g": "i32",
    "back_b": "i32",
    "gain": "i32",
}


def compile_for(arch: int = 90) -> int:
    """Compile both specialisations (nearest, trilinear) for sm_<arch> ahead of time, on the
    CPU (the interpreter accepts code the compiler rejects; kernels/compile_check.py says why);
    returns how many compiled. Run without TRITON_INTERPRET."""
    from triton.backends.compiler import GPUTarget  # start-up: the compiler, for this check only
    from triton.compiler import ASTSource  # start-up: the compiler, for this check only

    for trilinear in (False, True):
        signature = {**SIGNATURE, "TRILINEAR": "constexpr", "BLOCK": "constexpr"}
        source = ASTSource(
            fn=_march_kernel, signature=signature, constexprs={"TRILINEAR": trilinear, "BLOCK": BLOCK}
        )
        triton.compile(source, target=GPUTarget("cuda", arch, 32), options={"num_warps": 4})
    return 2
