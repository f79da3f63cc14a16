"""A Ray sweep's progress per node in the terminal: one tqdm bar per node (jobs done, jobs
running there now), the bars drawn only where stderr is a terminal. Elsewhere (a log file, a
pipe, CI) nothing is drawn: the sweep's one line per finished job is the log, so a node's
progress never floods a log with redrawn bars."""

from __future__ import annotations

import sys

from tqdm import tqdm


def node_label(ip: str, node_id: str, gpu: bool) -> str:
    """A node as the terminal names it: its address, the start of its Ray id, GPU or CPU."""
    return f"{ip} {node_id[:8]} {'GPU' if gpu else 'CPU'}"


class NodeProgress:
    """Jobs done and running per node of a sweep of `total` jobs (bars only on a terminal; none
    with `shown` False, as with --quiet). write() prints a log line above the bars."""

    def __init__(self, total: int, shown: bool = True, stream=None):
        self.total = total
        self.stream = stream or sys.stderr
        self.drawn = shown and self.stream.isatty()
        self.bars: dict[str, tqdm] = {}
        self.running: dict[str, int] = {}
        self.done: dict[str, int] = {}

    def _bar(self, node: str, label: str) -> tqdm:
        if node not in self.bars:
            self.running[node] = 0
            self.done[node] = 0
            self.bars[node] = tqdm(
                total=self.total,
                desc=label,
                unit="job",
                position=len(self.bars),
                file=self.stream,
                disable=not self.drawn,
                leave=True,
                dynamic_ncols=True,
            )
        return self.bars[node]

    def started(self, node: str, label: str, jobs: int) -> None:
        """A task of `jobs` jobs began on `node`."""
        bar = self._bar(node, label)
        self.running[node] += jobs
        bar.set_postfix_str(f"{self.running[node]} running", refresh=True)

    def landed(self, node: str, label: str, jobs: int) -> None:
        """`jobs` jobs of `node` ended (done or failed)."""
        bar = self._bar(node, label)
        self.running[node] = max(0, self.running[node] - jobs)
        self.done[node] += jobs
        bar.set_postfix_str(f"{self.running[node]} running", refresh=False)
        bar.update(jobs)

    def dropped(self, node: str, jobs: int) -> None:
        """`jobs` jobs of `node` stopped running without an end (a dead task's, run again elsewhere)."""
        if node in self.bars:
            self.running[node] = max(0, self.running[node] - jobs)
            self.bars[node].set_postfix_str(f"{self.running[node]} running", refresh=True)

    def counts(self) -> dict[str, tuple[int, int]]:
        """Each node's (jobs done, jobs running)."""
        return {node: (self.done[node], self.running[node]) for node in self.bars}

    def write(self, line: str) -> None:
        """A log line, above the bars where they are drawn."""
        if self.drawn and self.bars:
            tqdm.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
