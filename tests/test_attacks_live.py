"""Attacks on the live studio's HTTP routes (render/live/server.py): /sound serves only the file
the preset followed, /files/N only a number the server gave."""

from __future__ import annotations

import os

from test_audio_render import beat_track, write_wav
from test_live_audio import performance
from test_live_server import run, studio

from physarum.render.live.server import Studio


def test_a_sound_file_replaced_with_its_size_and_time_kept_is_not_served(tmp_path):
    sound = write_wav(tmp_path / "beat.wav", beat_track(1.0))
    live = Studio(performance(sound), tmp_path / "out", backend="torch", device="cpu")
    before = os.stat(sound)

    async def test(client):
        assert (await client.get("/sound")).status == 200
        other = bytearray(sound.read_bytes())
        other[100:200] = bytes(100)  # another sound of the same size
        (tmp_path / "other.wav").write_bytes(other)
        os.utime(tmp_path / "other.wav", ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(tmp_path / "other.wav", sound)  # moved over it: size and mtime as they were
        assert os.stat(sound).st_size == before.st_size and os.stat(sound).st_mtime_ns == before.st_mtime_ns
        changed = await client.get("/sound")
        assert changed.status == 409 and "changed after it was read" in await changed.text()

    run(test, live)


def test_a_file_number_of_other_digits_is_not_found(tmp_path):
    async def test(client):
        for name in ("%C2%B2", "%D9%A3", "1" * 40):  # superscript two, Arabic-Indic three, a huge one
            assert (await client.get(f"/files/{name}")).status == 404

    run(test, studio(tmp_path))
