"""The `kestrel` command of a pip install: the same CLI as the `kestrel` binary (its Rust
`kestrel_cli::main_with`, run inside the extension), so every message that names a
`kestrel ...` command works without the Rust toolchain. Also `python -m kestrel ...`."""
import signal
import sys
import threading

from . import _kestrel


def main(argv: list[str] | None = None) -> None:
    """Runs `kestrel ARGS...` (default: this process's arguments) and exits with its status."""
    args = sys.argv[1:] if argv is None else list(argv)
    # Ctrl-C stops the command as it stops the binary: Python's handler would only set a flag
    # that the Rust loop never reads.
    if hasattr(signal, "SIGINT") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdout.flush()
    code = _kestrel.cli_main(["kestrel", *args])
    raise SystemExit(code)
