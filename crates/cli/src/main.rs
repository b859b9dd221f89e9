//! The `kestrel` binary: [`kestrel_cli::main_with`] over the process's arguments.

fn main() {
    std::process::exit(kestrel_cli::main_with(std::env::args().collect()));
}
