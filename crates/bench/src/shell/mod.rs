//! `multiverse shell`: the multi-session script shell.

/// Arguments of `multiverse shell`.
#[derive(clap::Args)]
pub struct ShellArgs {}

/// `multiverse shell`.
pub fn run(_a: ShellArgs) -> Result<(), String> {
    Err("shell: not yet implemented".into())
}
