"""render/run/preload.py: PHYSARUM_PRELOAD=1 imports a render's heavy libraries on a thread while
the command reads its preset; the render's bytes and its refusals stay what they were."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from physarum.render.run import preload
from support import tiny_data, write_preset


def _physarum(args: list[str], cwd, switch: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != preload.SWITCH}
    if switch is not None:
        env[preload.SWITCH] = switch
    command = [sys.executable, "-m", "physarum.render.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def test_only_physarum_preload_1_asks_for_it():
    assert preload.wanted({preload.SWITCH: "1"})
    assert not any(preload.wanted(env) for env in ({}, {preload.SWITCH: "0"}, {preload.SWITCH: "yes"}))
    assert preload.start("torch", "cpu", {}) is None


def test_the_thread_imports_a_cpu_renders_libraries_and_not_triton():
    code = (
        "import sys\nfrom physarum.render.run import preload\n"
        f"thread = preload.start('torch', 'cpu', {{{preload.SWITCH!r}: '1'}})\n"
        "print(thread.daemon, 'torch' in sys.modules)\nthread.join()\n"
        "print(*[name in sys.modules for name in ('torch', 'numpy', 'av', 'triton')])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    first, second = done.stdout.splitlines()
    assert first.split()[0] == "True", done.stderr  # a daemon: a mistake's exit waits for nothing
    assert second.split() == ["True", "True", "True", "False"], done.stderr


@pytest.mark.slow
def test_a_preloaded_render_writes_the_same_bytes_and_refuses_bad_input_alike(tmp_path):
    path = write_preset(tmp_path, tiny_data())
    digests = []
    for switch in (None, "1"):
        out = tmp_path / f"out-{switch}"
        done = _physarum(
            ["render", str(path), "--out", str(out), "--quiet", "--backend", "torch"], tmp_path, switch
        )
        assert done.returncode == 0, done.stderr
        files = sorted(p for p in out.rglob("*") if p.suffix in (".gif", ".mp4", ".png"))
        digests.append({p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files})
    assert digests[0] == digests[1] and len(digests[0]) == 3
    bad = [
        "render",
        str(path),
        "--set",
        "model.decay=7",
        "--out",
        str(tmp_path / "bad"),
        "--backend",
        "torch",
    ]
    refused = [_physarum(bad, tmp_path, switch) for switch in (None, "1")]
    assert [r.returncode for r in refused] == [2, 2]
    assert refused[1].stderr == refused[0].stderr and "model.decay" in refused[1].stderr
    assert "Traceback" not in refused[1].stderr and not (tmp_path / "bad").exists()
