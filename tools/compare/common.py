"""Shared by the comparison scripts: the peer venvs, single-threaded numeric libraries, the
commit being measured."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# One thread for BLAS/OpenMP and XLA, so peers and Kestrel compare core for core.
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1", "PYTHONWARNINGS": "ignore"}

# Prefix of a peer process timed as "1 thread": one core. JAX 0.10's CPU runtime does not
# honour XLA_FLAGS' single-thread settings above (measured: its jitted MLP and ALLO updates ran
# at 128-142% CPU with them), so the variables alone did not keep JAX peers on one core.
ONE_CORE = ["taskset", "-c", "0"]


def venv_python(venv, requirements):
    """The venv's python, creating the venv from `requirements` when it does not exist."""
    p = os.path.join(ROOT, "tools", venv, "bin", "python")
    if not os.path.exists(p):
        subprocess.run([sys.executable, "-m", "venv", os.path.join(ROOT, "tools", venv)], check=True)
        subprocess.run([p, "-m", "pip", "install", "-q", "-r", os.path.join(ROOT, requirements)], check=True)
    return p


def install_kestrel(py, env=None):
    """Installs this checkout's Kestrel into the venv of `py`: the wheel `KESTREL_WHEEL` names
    (one built already, e.g. with `maturin build --release`), else a release build of
    ./crates/py. Every comparison that imports kestrel in a venv calls this first, so it never
    times a stale build."""
    wheel = os.environ.get("KESTREL_WHEEL")
    target = [wheel] if wheel else ["--no-build-isolation", os.path.join(ROOT, "crates", "py")]
    subprocess.run([py, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", *target], check=True, env=env)


def commit():
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def cpu_model():
    """The CPU's model name (BENCHMARKS.md names it beside every figure)."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def kestrel_release():
    """Builds the release binary and returns its path."""
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "kestrel"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "release", "kestrel")
