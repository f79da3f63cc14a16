"""`physarum live PRESET`: the preset (at its --preview size unless --full) played in a page."""

from __future__ import annotations

import asyncio
import secrets
import sys
from pathlib import Path

from ..base.errors import RenderError, printable
from ..preset.catalog import resolve_preset_path
from ..preset.load import load_preset
from ..preset.reduce import preview_ratio, reduce_preset
from .record import Performance
from .server import Studio, loopback, serve


def live_preset(args):
    """The preset the page plays: the file or curated name with --set and --seed, reduced as
    --preview reduces it (args.preview_side: cli/arguments.py's) unless --full; and the note
    saying how it was reduced."""
    overrides = {"seed": args.seed} if args.seed is not None else None
    preset = load_preset(resolve_preset_path(args.preset), args.settings, overrides)
    if preset.dims != 2:
        raise RenderError(f"{preset.name}: physarum live shows 2D presets")
    if args.full:
        return preset, ""
    return reduce_preset(preset, preview_ratio(preset, args.preview_side), "preview")


def run_live(args) -> int:
    preset, note = live_preset(args)
    if note:
        print(printable(note), file=sys.stderr)
    if not 0 <= args.port <= 65535:
        raise RenderError(f"--port: a port is 0 to 65535 (got {args.port})")
    token = None if loopback(args.host) else secrets.token_urlsafe(18)
    studio = Studio(
        Performance.of(preset),
        Path(args.out) / f"{preset.name}-live",
        backend=args.backend,
        device=args.device,
        shared=args.shared,
        token=token,
    )

    def say(url: str) -> None:
        print(printable(f"physarum live: {preset.name} at {url}  (Ctrl-C stops)"), flush=True)

    try:
        asyncio.run(serve(studio, args.host, args.port, say))
    except OSError as error:
        raise RenderError(f"--host {args.host} --port {args.port}: {error.strerror or error}") from None
    print("stopped", file=sys.stderr)
    return 0
