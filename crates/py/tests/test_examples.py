"""The examples a researcher would copy run and (PPO) learn."""

import os
import subprocess
import sys

EX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")


def test_ppo_learns_cartpole():
    out = subprocess.run([sys.executable, os.path.join(EX, "ppo_cartpole.py"), "--check", "--seed", "0"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "final mean return" in out.stdout


def test_arc_tour_runs():
    out = subprocess.run([sys.executable, os.path.join(EX, "arc_tour.py")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
