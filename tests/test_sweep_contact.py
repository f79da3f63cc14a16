"""The contact sheet: every job's last frame, tiled and labelled."""

from __future__ import annotations

import copy

import numpy as np
from PIL import Image

from physarum.render import sweep as sweeps
from physarum.render.sweep import write_contact_sheet, write_gallery
from physarum.render.sweep.contact import alpha_mode
from support import SWEEP_BASE, sweep_records, write_sweep


def test_contact_sheet_tiles_every_jobs_last_frame(tmp_path):
    sweep_dir, records = sweep_records(tmp_path, failed=True)
    write_contact_sheet(sweep_dir, records)
    with Image.open(sweep_dir / "contact.png") as sheet:
        assert sheet.size[0] == 3 * (160 + 12) and sheet.size[1] == 2 * (160 + 12 + 4 * 14)
        tile = sheet.crop((6, 6, 6 + 160, 6 + 160)).convert("RGB")
        with Image.open(sweep_dir / records[0]["outputs"]["png"]) as still:
            expected = still.convert("RGB").resize((160, 160), Image.NEAREST)
        assert tile.tobytes() == expected.tobytes()


def test_contact_sheet_and_gallery_show_transparent_stills_over_a_checkerboard(tmp_path):
    base = copy.deepcopy(SWEEP_BASE)
    base["output"]["alpha"] = "straight"
    base["look"] = {"black": 0.3, "curve": "linear"}  # the faintest 30% transparent, the brightest opaque
    path = write_sweep(tmp_path, base=base, grid={"output.alpha": ["straight", "premultiplied"]}, seeds=[1])
    summary = sweeps.run_sweep(
        sweeps.load_sweep(path),
        sweeps.SweepOptions(devices="cpu", out_dir=tmp_path / "out", quiet=True, gallery=False),
        log=lambda line: None,
    )
    sweep_dir, records = tmp_path / "out" / "s", summary.records
    assert [alpha_mode(r) for r in records] == ["straight", "premultiplied"]
    write_gallery(sweep_dir, records)
    checker = np.array([[204, 204, 204], [255, 255, 255]], dtype=np.uint8)
    first = (sweep_dir / "contact.png").read_bytes()
    write_contact_sheet(sweep_dir, records)
    assert (sweep_dir / "contact.png").read_bytes() == first  # integer compositing: the same bytes
    with Image.open(sweep_dir / "contact.png") as sheet:
        assert sheet.mode == "RGB"
        sheet = np.asarray(sheet)
    for number, record in enumerate(records):
        with Image.open(sweep_dir / record["outputs"]["png"]) as still:
            assert still.mode == "RGBA" and still.size == (32, 32)
            rgba = np.asarray(still)
        x0 = number * (160 + 12) + 6
        tile = sheet[6 : 6 + 160, x0 : x0 + 160]
        # the 32-pixel still is enlarged 5 times (nearest): tile pixel (y, x) is still pixel (y // 5, x // 5)
        source = rgba.repeat(5, axis=0).repeat(5, axis=1)
        y, x = np.indices((160, 160))
        back = checker[(y // 8 + x // 8) % 2]
        clear, solid = source[..., 3] == 0, source[..., 3] == 255
        assert clear.any() and solid.any()
        assert (tile[clear] == back[clear]).all()  # the checkerboard where the trail is transparent
        assert (tile[solid] == source[solid][:, :3]).all()  # the trail's colour where it is opaque
        both = (back == checker[0]).all(axis=2) & ~clear & ~solid
        assert (tile[both] != back[both]).any()  # and between, the trail over the checkerboard
    page = (sweep_dir / "index.html").read_text()
    for record in records:
        mode = alpha_mode(record)
        assert f'<img class="transparent" data-alpha="{mode}" src="{record["outputs"]["png"]}"' in page
    assert ".card img.transparent {" in page
