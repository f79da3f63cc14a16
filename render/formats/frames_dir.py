"""The frames folder (`render --frames-dir`): every frame as a numbered PNG, for editing in other
tools, RGBA with output.alpha. Not a format of output.formats (it has no FORMAT): a flag asks
for it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..base.files import PartialFile, commit_together
from .alpha import join
from .contract import Frame
from .png import save_png


@dataclass(frozen=True)
class FramesDirSpec:
    """Every frame as a numbered PNG in `folder`: <stem>-00001.png, ...; alpha: output.alpha's
    mode (RGBA PNGs; None: RGB), reads: "rgba" with it."""

    folder: Path
    stem: str
    comment: str
    alpha: str | None = None
    reads: str = "rgb"

    format: ClassVar[str] = "frames"

    @property
    def path(self) -> Path:
        return Path(self.folder) / f"{self.stem}-%05d.png"

    def open(self) -> FramesDirWriter:
        return FramesDirWriter(self)


class FramesDirWriter:
    """Every frame as a numbered PNG (<stem>-00001.png, ...: frame number + 1, so that a render
    resumed from a checkpoint names its frames as the uninterrupted render does) for editing in
    other tools.

    Each frame is written under its temporary name; they appear under their names with the
    render's other files (complete() returns them all); on abort none is left. Reads a frame's RGB.
    """

    COMPRESS_LEVEL = 1  # a sequence is an intermediate: fast to write matters more than size

    def __init__(self, spec: FramesDirSpec):
        self.folder, self.stem, self.comment = Path(spec.folder), spec.stem, spec.comment
        self.alpha = spec.alpha
        self.path = spec.path
        self.frames: list[PartialFile] = []

    def write(self, frame: Frame) -> None:
        partial = PartialFile(self.folder / f"{self.stem}-{frame.number + 1:05d}.png")
        try:
            with partial.open("wb") as file:
                picture = frame.rgb if self.alpha is None else join(frame.rgb, frame.alpha, self.alpha)
                save_png(file, picture, self.comment, self.COMPRESS_LEVEL)
        except BaseException:
            partial.abort()
            raise
        self.frames.append(partial)

    def complete(self) -> list[PartialFile]:
        return list(self.frames)

    def commit(self) -> None:
        commit_together(self.complete())

    def abort(self) -> None:
        for partial in self.frames:
            partial.abort()
