"""`python -m kestrel ARGS...`: the `kestrel` command (see `kestrel._cli`)."""
from ._cli import main

main()
