"""The Triton kernels compile for an NVIDIA H100/H200 (sm_90), ahead of time on the CPU.

The interpreter tests run kernels as Python, which accepts code the compiler rejects (an early
return under a constexpr `if` once passed every interpreter test and failed on the GPU); this
compiles every specialisation the backend launches (kernels/compile_check.py) down to a cubin
with the ptxas that ships in the triton wheel, so no GPU is needed. It runs in a process of its
own because TRITON_INTERPRET=1, which the test command sets, replaces the compiler."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("triton")

pytestmark = pytest.mark.slow  # about 30 s: every specialisation compiled


def test_every_kernel_specialisation_compiles_for_sm90():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run(
        [sys.executable, "-m", "physarum.kernels.compile_check", "--arch", "90"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert report.count("\nok ") + report.startswith("ok ") == 78, report  # every case ran (68 2D, 10 3D)
