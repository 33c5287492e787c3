//! `--workload list-append`: lists of writer tags
//! (`multiverse_workloads::list_append`), made for `--verify`, which then
//! also recovers each key's version order from the values and compares it
//! with the commit timestamps (`multiverse_check::check_appends`).
//! `--list-keys` hot slots (default 8), `--list-ops` operations per
//! transaction (default 1-4), `--list-read-pct` of them reads (default 50),
//! lists of at most `--list-max-len` tags (default 16) before a slot moves
//! on to a fresh key.

use super::super::{measure, parse_count, Ctx, Host, Measurement};
use super::Given;

use multiverse_workloads::list_append::{ListAppend, ListAppendConfig};
use multiverse_workloads::sibench::parse_range;
use multiverse_workloads::Kind;

/// Flags of the list-append workload, boxed: `BenchArgs` is a variant of
/// the command enum and must stay small (clippy's `large_enum_variant`).
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {
    /// The flags.
    #[command(flatten)]
    pub f: Box<ListAppendFlags>,
}

/// The list-append flags themselves.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct ListAppendFlags {
    /// list-append: hot slots (each a key at a time) [default: 8].
    #[arg(long, value_name = "N", help_heading = "Workload list-append", value_parser = parse_count)]
    pub list_keys: Option<u64>,
    /// list-append: operations per transaction, MIN-MAX or N [default: 1-4].
    #[arg(long, value_name = "RANGE", help_heading = "Workload list-append")]
    pub list_ops: Option<String>,
    /// list-append: percent of the operations that read (the others append) [default: 50].
    #[arg(long, value_name = "PCT", help_heading = "Workload list-append", value_parser = parse_count)]
    pub list_read_pct: Option<u64>,
    /// list-append: tags per list before its slot moves on to a fresh key [default: 16].
    #[arg(long, value_name = "N", help_heading = "Workload list-append", value_parser = parse_count)]
    pub list_max_len: Option<u64>,
}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        let f = &self.f;
        let mut g = Vec::new();
        if f.list_keys.is_some() {
            g.push("--list-keys");
        }
        if f.list_ops.is_some() {
            g.push("--list-ops");
        }
        if f.list_read_pct.is_some() {
            g.push("--list-read-pct");
        }
        if f.list_max_len.is_some() {
            g.push("--list-max-len");
        }
        g
    }
}

/// Runs the list-append workload.
pub fn run<H: Host>(f: &Flags, c: &Ctx, db: &H) -> Result<Measurement, String> {
    let f = &f.f;
    super::refuse_common(c, Kind::ListAppend, false, false)?;
    let d = ListAppendConfig::default();
    let cfg = ListAppendConfig {
        keys: f.list_keys.unwrap_or(d.keys),
        ops: match &f.list_ops {
            Some(s) => parse_range(s).map_err(|e| format!("--list-ops: {e}"))?,
            None => d.ops,
        },
        read_pct: f.list_read_pct.map_or(d.read_pct, |p| u32::try_from(p).unwrap_or(u32::MAX)),
        max_len: f.list_max_len.unwrap_or(d.max_len),
    };
    cfg.validate()?;
    let w = ListAppend::setup(db, cfg)?;
    measure(db, &w, c)
}
