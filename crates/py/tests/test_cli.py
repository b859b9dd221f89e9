"""The `kestrel` command a pip install gives (issue 57, item 1): the console script over the
extension runs the same CLI as the binary, and Python's errors name the Python way first."""
import json
import os
import shutil
import subprocess
import sys

import pytest

import kestrel


def kestrel_command():
    """The console script pip installed beside this interpreter."""
    bindir = os.path.dirname(sys.executable)
    exe = shutil.which("kestrel", path=bindir)
    assert exe is not None, f"no `kestrel` command in {bindir}: the wheel's console script is missing"
    return exe


def run(args, **kw):
    return subprocess.run([kestrel_command(), *args], capture_output=True, text=True, timeout=120, **kw)


def test_the_wheel_ships_the_kestrel_command():
    r = run(["--version"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"kestrel {kestrel.__version__} (commit {kestrel.__commit__})"
    rows = [json.loads(line) for line in run(["evo", "strategies", "--json"]).stdout.splitlines()]
    assert len(rows) == 37 and {r["evosax"] for r in rows} == set(kestrel.evo.evosax_names())
    # `kestrel config <kind>` prints the commented TOML that `--config` reads back.
    toml = run(["config", "mppi-tune"])
    assert toml.returncode == 0 and "generations" in toml.stdout
    assert toml.stdout == kestrel.config_toml("mppi-tune")


def test_the_command_runs_a_run_and_reports_errors_as_the_binary(tmp_path):
    r = run(["evo", "run", "--strategy", "CMA_ES", "--num-dims", "3", "--generations", "5",
             "--out-dir", str(tmp_path)])
    assert r.returncode == 0, r.stderr
    (folder,) = tmp_path.iterdir()
    assert (folder / "config.toml").is_file()
    # The run folder records the command as typed.
    record = json.loads((folder / "record.json").read_text())
    argvs = [launch["argv"] for launch in record["launches"]]
    assert argvs[0][:5] == ["kestrel", "evo", "run", "--strategy", "CMA_ES"], argvs
    bad = run(["evo", "run", "--strategy", "cmaess", "--out-dir", str(tmp_path / "x")])
    assert bad.returncode == 1 and "error:" in bad.stderr and "did you mean" in bad.stderr
    assert not (tmp_path / "x").exists()
    flag = run(["evo", "run", "--genrations", "3"])
    assert flag.returncode == 1 and "--generations" in flag.stderr


def test_python_m_kestrel_is_the_same_command():
    r = subprocess.run([sys.executable, "-m", "kestrel", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == f"kestrel {kestrel.__version__} (commit {kestrel.__commit__})"


def test_python_errors_name_the_python_way_first():
    with pytest.raises(ValueError, match=r"`kestrel\.config\(kind\)` lists every key; on the command line"):
        kestrel.config("evo", {"genrations": 3})
    with pytest.raises(ValueError, match=r"`kestrel\.run_kinds\(\)` and `kestrel\.list_envs\(\)`"):
        kestrel.config("no-such-kind")


def test_the_extras_install_what_their_users_tools_need():
    """Issue 57: `[tensorboard]` has the `tensorboard` command (and SB3's `tensorboard_log=`),
    `[sb3]` and `[ray]` their packages, and the wheel its `kestrel` script."""
    import pathlib
    import tomllib

    meta = tomllib.loads((pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    extras = {k: " ".join(v) for k, v in meta["optional-dependencies"].items()}
    assert "tensorboardX" in extras["tensorboard"] and "tensorboard>=" in extras["tensorboard"]
    assert "stable-baselines3" in extras["sb3"] and "ray[tune]" in extras["ray"]
    assert meta["scripts"]["kestrel"] == "kestrel._cli:main"
