//! Captures the git commit at build time as `MULTIVERSE_GIT_COMMIT`
//! (`git rev-parse --short HEAD`, or "unknown" outside a git checkout), and
//! the compiler as `MULTIVERSE_RUSTC` (`rustc --version` of the compiler
//! cargo runs, for the benchmark record's `build`).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=MULTIVERSE_GIT_COMMIT={commit}");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=MULTIVERSE_RUSTC={version}");
    println!("cargo:rerun-if-changed=build.rs");
    // Rebuild when HEAD moves: the HEAD file (branch switches), the branch's
    // ref file (new commits) and packed-refs. Only existing files are named,
    // since a missing one would make cargo rerun this script on every build.
    // In a linked worktree HEAD lives in its own git dir, the refs in the
    // common one.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]).unwrap_or_else(|| dir.clone());
        let mut watch = vec![format!("{dir}/HEAD"), format!("{common}/packed-refs")];
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch.push(format!("{common}/{r}"));
        }
        for p in watch.iter().filter(|p| Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
}
