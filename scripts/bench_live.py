"""The live page's speed, measured by a client on the same host (docs/live.md, "Measured").

Starts `physarum live PRESET` (its extra flags after --), connects to its WebSocket on loopback as
the page does, and measures:

- fps: frames received per second over --seconds, after --warmup seconds;
- latency: from sending a change of model.sensor_angle (alternating two values) to receiving the
  first frame that shows it (the frame number the server's "applied" reply names), --changes
  times, spaced --gap seconds apart; median, 90th percentile and the largest.

The server is stopped with SIGINT at the end. Prints one JSON document (and writes it to --json).

    python scripts/bench_live.py quickstart --seconds 10 -- --backend torch --device cpu
    python scripts/bench_live.py quickstart -- --full --set canvas.width=1024 --set canvas.height=1024
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import signal
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

import aiohttp


def header(data: bytes) -> dict:
    length = struct.unpack(">I", data[:4])[0]
    return json.loads(data[4 : 4 + length])


async def measure(url: str, args) -> dict:
    frames, sizes, latencies = [], [], []
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url.replace("http://", "ws://").split("?")[0] + "ws") as ws:
            started = time.perf_counter()
            shape = None
            waiting: dict | None = None  # the change in flight: sent time, then its frame
            changes_sent, value = 0, 0
            next_change = started + args.warmup + args.seconds
            async for message in ws:
                now = time.perf_counter()
                if message.type == aiohttp.WSMsgType.BINARY:
                    head = header(message.data)
                    shape = (head["width"], head["height"])
                    if args.warmup <= now - started <= args.warmup + args.seconds:
                        frames.append(now)
                        sizes.append(len(message.data))
                    if waiting and "frame" in waiting and head["frame"] >= waiting["frame"]:
                        latencies.append(now - waiting["sent"])
                        waiting = None
                elif message.type == aiohttp.WSMsgType.TEXT:
                    event = json.loads(message.data)
                    if event["type"] == "applied" and waiting is not None:
                        waiting["frame"] = event["changes"][0]["frame"]
                    elif event["type"] == "problem":
                        raise RuntimeError(event["problems"])
                else:
                    break
                if now >= next_change and waiting is None:
                    if changes_sent == args.changes:
                        break
                    value = 1 - value
                    waiting = {"sent": time.perf_counter()}
                    await ws.send_json(
                        {"type": "set", "key": "model.sensor_angle", "value": (30.0, 60.0)[value]}
                    )
                    changes_sent += 1
                    next_change = time.perf_counter() + args.gap
    span = frames[-1] - frames[0] if len(frames) > 1 else 0.0
    ordered = sorted(latencies)
    return {
        "frame": shape,
        "fps": round((len(frames) - 1) / span, 2) if span else 0.0,
        "frames_counted": len(frames),
        "mean_message_bytes": round(statistics.mean(sizes)) if sizes else 0,
        "latency_ms": {
            "median": round(1000 * statistics.median(ordered), 1),
            "p90": round(1000 * ordered[int(0.9 * (len(ordered) - 1))], 1),
            "max": round(1000 * ordered[-1], 1),
            "count": len(ordered),
        }
        if ordered
        else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("preset")
    parser.add_argument("--seconds", type=float, default=10.0, help="frames counted over this long")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before counting")
    parser.add_argument("--changes", type=int, default=10, help="changes timed after the count")
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between changes")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args, extra = parser.parse_args(argv[:split]), argv[split + 1 :]  # after --: physarum live's flags
    command = [sys.executable, "-m", "physarum.render.cli", "live", args.preset, "--port", "0", *extra]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        if " at " not in line:
            raise SystemExit(f"the server did not start: {line!r}")
        result = asyncio.run(measure(line.split(" at ")[1].split()[0], args))
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    result.update(
        {
            "command": " ".join(["physarum live", args.preset, *extra]),
            "host": platform.node(),
            "python": platform.python_version(),
            "seconds": args.seconds,
            "server_exit": server.returncode,
        }
    )
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
