"""The contact sheet: every job's last frame, tiled and labelled."""

from __future__ import annotations

from PIL import Image

from physarum.render.sweep import write_contact_sheet
from support import sweep_records


def test_contact_sheet_tiles_every_jobs_last_frame(tmp_path):
    sweep_dir, records = sweep_records(tmp_path, failed=True)
    write_contact_sheet(sweep_dir, records)
    with Image.open(sweep_dir / "contact.png") as sheet:
        assert sheet.size[0] == 3 * (160 + 12) and sheet.size[1] == 2 * (160 + 12 + 4 * 14)
        tile = sheet.crop((6, 6, 6 + 160, 6 + 160)).convert("RGB")
        with Image.open(sweep_dir / records[0]["outputs"]["png"]) as still:
            expected = still.convert("RGB").resize((160, 160), Image.NEAREST)
        assert tile.tobytes() == expected.tobytes()
