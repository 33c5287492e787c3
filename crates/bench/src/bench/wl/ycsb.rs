//! `--workload ycsb`: YCSB as in section 4.2 of the BOHM paper
//! (`multiverse_workloads::ycsb`): `--rows` records (default 1,000,000) of
//! `--value-bytes` bytes (default 1,000), Zipfian keys with `--theta`
//! (default 0, uniform; the paper's high contention is 0.9), the types
//! `10rmw`, `2rmw-8r`, `scan` (`--scan-records`, default 10,000), `10op`
//! (ten reads or blind writes, `--write-pct` of them writes, default 50:
//! CCBench's YCSB) and `scan-rmw` (a scan's reads and one read-modify-write:
//! read-mostly) in `--mix` (default `10rmw:100`); `--rmw` chooses how a
//! read-modify-write is issued (`modify`, `read-update`, `for-update`).
//! `--zipf exact|gray`, `--scramble` and `--allow-repeats` draw the keys as
//! a peer's harness does (the module docs of `multiverse_workloads::ycsb`).

use super::super::{check_bytes, measure, parse_count, units, Ctx, Host, Measurement};
use super::Given;

use multiverse_workloads::ycsb::{Rmw, Ycsb, YcsbConfig, TYPES};
use multiverse_workloads::zipf::ZipfKind;
use multiverse_workloads::{Kind, Mix};

/// Flags of the ycsb workload, boxed: `BenchArgs` is a variant of the
/// command enum and must stay small (clippy's `large_enum_variant`).
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {
    /// The flags.
    #[command(flatten)]
    pub f: Box<YcsbFlags>,
}

/// The ycsb flags themselves.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct YcsbFlags {
    /// ycsb: Zipfian parameter of the records of 10rmw, 2rmw-8r, 10op and
    /// scan-rmw: 0 is uniform, 0.9 the paper's high contention; 1 and above
    /// allowed with --zipf exact [default: 0].
    #[arg(long, value_name = "THETA", help_heading = "Workload ycsb", allow_negative_numbers = true)]
    pub theta: Option<f64>,
    /// ycsb: bytes per record value, at least 16 [default: 1000].
    #[arg(long, value_name = "B", help_heading = "Workload ycsb", value_parser = parse_count)]
    pub value_bytes: Option<u64>,
    /// ycsb: distinct random records read by a scan transaction [default: 10000].
    #[arg(long, value_name = "N", help_heading = "Workload ycsb", value_parser = parse_count)]
    pub scan_records: Option<u64>,
    /// ycsb: do not issue prefetch hints for a transaction's records.
    #[arg(long, help_heading = "Workload ycsb")]
    pub ycsb_no_prefetch: bool,
    /// ycsb: percent of a 10op transaction's operations that are blind writes [default: 50].
    #[arg(long, value_name = "PCT", help_heading = "Workload ycsb", value_parser = parse_count)]
    pub write_pct: Option<u64>,
    /// ycsb: how a read-modify-write reaches the engine: modify (one call),
    /// read-update (get, then update) or for-update (get_for_update, then
    /// update) [default: modify].
    #[arg(long, value_name = "STYLE", help_heading = "Workload ycsb", value_parser = Rmw::parse)]
    pub rmw: Option<Rmw>,
    /// ycsb: the Zipfian generator: exact, or gray (Gray et al.'s
    /// approximation, as DBx1000, CCBench and YCSB draw; theta below 1) [default: exact].
    // A string, parsed by `run`: a bad value gets the one-line error of a
    // bad value, not clap's usage text.
    #[arg(long, value_name = "KIND", help_heading = "Workload ycsb")]
    pub zipf: Option<String>,
    /// ycsb: spread the Zipfian ranks over the table with an FNV-1a hash, as
    /// YCSB's scrambled Zipfian does (otherwise the hot records are the low keys).
    #[arg(long, help_heading = "Workload ycsb")]
    pub scramble: bool,
    /// ycsb: draw a transaction's ten records independently, so one may come
    /// twice (as CCBench does); otherwise they are distinct.
    #[arg(long, help_heading = "Workload ycsb")]
    pub allow_repeats: bool,
}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        let f = &self.f;
        let mut g = Vec::new();
        if f.theta.is_some() {
            g.push("--theta");
        }
        if f.value_bytes.is_some() {
            g.push("--value-bytes");
        }
        if f.scan_records.is_some() {
            g.push("--scan-records");
        }
        if f.ycsb_no_prefetch {
            g.push("--ycsb-no-prefetch");
        }
        if f.write_pct.is_some() {
            g.push("--write-pct");
        }
        if f.rmw.is_some() {
            g.push("--rmw");
        }
        if f.zipf.is_some() {
            g.push("--zipf");
        }
        if f.scramble {
            g.push("--scramble");
        }
        if f.allow_repeats {
            g.push("--allow-repeats");
        }
        g
    }
}

/// Runs the ycsb workload.
pub fn run<H: Host>(f: &Flags, c: &Ctx, db: &H) -> Result<Measurement, String> {
    let f = &f.f;
    super::refuse_common(c, Kind::Ycsb, true, true)?;
    let d = YcsbConfig::default();
    let zipf = match f.zipf.as_deref() {
        None => d.zipf,
        Some(z) => ZipfKind::parse(z).map_err(|_| format!("--zipf '{z}': expected exact or gray"))?,
    };
    let cfg = YcsbConfig {
        rows: c.rows.unwrap_or(d.rows),
        value_bytes: f.value_bytes.map_or(d.value_bytes, |b| usize::try_from(b).unwrap_or(usize::MAX)),
        theta: f.theta.unwrap_or(d.theta),
        scan_records: f.scan_records.unwrap_or(d.scan_records),
        mix: c.mix.as_deref().map(|s| Mix::parse(TYPES, s)).transpose()?.unwrap_or(d.mix),
        prefetch: !f.ycsb_no_prefetch,
        write_pct: f.write_pct.map_or(d.write_pct, |p| u32::try_from(p).unwrap_or(u32::MAX)),
        rmw: f.rmw.unwrap_or(d.rmw),
        zipf,
        scramble: f.scramble,
        allow_repeats: f.allow_repeats,
    };
    if f.write_pct.is_some() && cfg.mix.pct(multiverse_workloads::ycsb::OP10) == 0.0 {
        return Err("--write-pct applies to 10op transactions: add 10op to --mix (e.g. 10op:100)".into());
    }
    let scans = cfg.mix.pct(multiverse_workloads::ycsb::SCAN) + cfg.mix.pct(multiverse_workloads::ycsb::SCAN_RMW);
    if f.scan_records.is_some() && scans == 0.0 {
        return Err(
            "--scan-records applies to scan and scan-rmw transactions: add one to --mix (e.g. 10rmw:99,scan:1)".into(),
        );
    }
    cfg.validate()?;
    // Before the table (and its bucket array) is created.
    check_bytes(cfg.estimated_bytes(), &format!("--rows {}", units::int(cfg.rows)))?;
    let w = Ycsb::setup(db, cfg)?;
    measure(db, &w, c)
}
