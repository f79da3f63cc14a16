"""A frame loop of fixed Python work per frame (a stand-in for a GPU render's host side) handing
512x512 index frames to a budgeted GIF writer behind an encoder thread: the loop's wall with and
without the GIF, and the GIF's end."""
import sys, time, tempfile
from pathlib import Path
import numpy as np
from physarum.render.formats.contract import Frame
from physarum.render.formats.gif import GifSpec, GifWriter
from physarum.render.look.colour import palette_table
from physarum.render.out.frames import EncoderWorker

def work(ms):
    end = time.perf_counter() + ms / 1000
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x

y, x = np.mgrid[0:512, 0:512]
rng = np.random.default_rng(0)
frames0 = [np.clip(127 + 100 * np.sin((x + 3 * f) / 7.0) * np.cos((y - 2 * f) / 11.0) + rng.integers(-20, 21, (512, 512)), 0, 255).astype(np.uint8) for f in range(8)]
frames = [np.zeros((512, 512), np.uint8) + f for f in range(8)] if len(sys.argv) > 4 else frames0
pal = palette_table("magma")
mode = sys.argv[1]; count = 80; per = float(sys.argv[2]); procs = int(sys.argv[3])
with tempfile.TemporaryDirectory() as d:
    worker = None
    if mode != "none":
        budget = None if mode == "unbudgeted" else 10_000_000
        spec = GifSpec(Path(d) / "x.gif", 512, 512, 30, 0, "p", pal.tobytes(), budget, count, (256, 1), procs)
        worker = EncoderWorker("gif", GifWriter(spec), {"preview"})
    time.sleep(0.5)  # the workers start
    t = time.perf_counter()
    for n in range(count):
        work(per)
        if worker:
            worker.write(Frame(n, frames[n % 8], pal))
    loop = time.perf_counter() - t
    t = time.perf_counter()
    if worker:
        worker.complete()
    end = time.perf_counter() - t
print(f"{mode:10s} procs {procs} loop {loop:.3f} s (work alone {count * per / 1000:.2f}) end {end:.3f} s")
