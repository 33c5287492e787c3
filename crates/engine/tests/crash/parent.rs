//! The parent's side: spawning a child (this test binary, running
//! `crash_child`), killing it, reopening its directory and checking what
//! survived; the two crash tests.

use super::*;

/// A running child and its stdout, line by line.
struct Running {
    child: Child,
    lines: Receiver<String>,
    /// The lines taken by `wait_for`.
    taken: Vec<String>,
    /// When the child printed "opened" (counted from its spawn).
    opened: Arc<OnceLock<Duration>>,
    stdout: std::thread::JoinHandle<()>,
    stderr: std::thread::JoinHandle<String>,
}

fn spawn(dir: &Path, cfg: &Config, mode: &str) -> Running {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("MULTIVERSE_CRASH_DIR", dir)
        .env("MULTIVERSE_CRASH_CONFIG", cfg.encode())
        .env("MULTIVERSE_CRASH_MODE", mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let (opened, started) = (Arc::new(OnceLock::new()), Instant::now());
    let opened2 = Arc::clone(&opened);
    let stdout = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // The harness's "test crash_child ... " precedes the first line.
            let line = line.strip_prefix("test crash_child ... ").map_or(line.clone(), str::to_string);
            if line == "opened" {
                let _ = opened2.set(started.elapsed());
            }
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    Running { child, lines, taken: Vec::new(), opened, stdout, stderr }
}

impl Running {
    /// Waits until the child prints `line` (false if it ended first).
    fn wait_for(&mut self, line: &str) -> bool {
        for l in self.lines.iter() {
            let found = l == line;
            self.taken.push(l);
            if found {
                return true;
            }
        }
        false
    }

    /// SIGKILLs the child (failing if it ended by itself) and returns
    /// every line it printed, and when it had opened the database.
    fn kill(mut self, what: &str) -> (Vec<String>, Option<Duration>) {
        let early = self.child.try_wait().unwrap();
        if early.is_none() {
            self.child.kill().unwrap(); // SIGKILL
        }
        self.child.wait().unwrap();
        self.stdout.join().unwrap();
        let err = self.stderr.join().unwrap();
        let mut lines = std::mem::take(&mut self.taken);
        lines.extend(self.lines.try_iter());
        let panicked: Vec<&String> = lines.iter().filter(|l| l.starts_with("panic")).collect();
        assert!(
            early.is_none() && panicked.is_empty(),
            "{what}: the child ended by itself ({early:?}): {panicked:?}\nlast lines: {:?}\nstderr: {err}",
            &lines[lines.len().saturating_sub(20)..]
        );
        (lines, self.opened.get().copied())
    }
}

fn iterations(default: u64) -> u64 {
    std::env::var("MULTIVERSE_CRASH_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn protocols() -> Vec<Protocol> {
    match std::env::var("MULTIVERSE_CRASH_PROTOCOLS") {
        Ok(s) => s.split(',').map(|p| p.trim().parse().unwrap()).collect(),
        Err(_) => DEFAULT_PROTOCOLS.iter().map(|p| p.parse().unwrap()).collect(),
    }
}

fn seed() -> u64 {
    std::env::var("MULTIVERSE_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xC4A5)
}

/// Parses `<word> <a> <b>` lines into (a, b) pairs.
fn pairs<'a>(lines: &'a [String], word: &'a str) -> impl Iterator<Item = (u64, u64)> + 'a {
    lines.iter().filter_map(move |l| {
        let mut w = l.split_whitespace();
        (w.next() == Some(word)).then(|| (w.next().unwrap().parse().unwrap(), w.next().unwrap().parse().unwrap()))
    })
}

#[test]
fn crash_recovery_keeps_every_acknowledged_and_observed_commit() {
    let iters = iterations(10);
    let mut rng = SmallRng::seed_from_u64(seed());
    let mut losses = Vec::new();
    let mut total_iters = 0;
    for protocol in protocols() {
        let dir = tempfile::tempdir().unwrap();
        // Per writer thread: the seqs that must be there (what the last
        // recovery found; acknowledged and observed ones are added).
        let mut expected: HashMap<u64, u64> = HashMap::new();
        let mut set_up = false; // the accounts exist
        let mut ready_after = Duration::from_millis(60);
        let (mut acks, mut saws, mut before_ready, mut in_checkpoint, mut lost_iters) = (0, 0, 0, 0, 0);
        for i in 0..iters {
            total_iters += 1;
            let cfg = Config::draw(protocol, &mut rng);
            let what = format!("{protocol} iteration {i} ({})", cfg.encode());
            let started = Instant::now();
            let mut child = spawn(dir.path(), &cfg, "transfers");
            if rng.gen_ratio(1, 5) {
                // Kill it before it is ready: inside the open (recovery, the
                // new generation's checkpoint) or while it sets up.
                let ms = ready_after.as_millis() as u64 * 5 / 4;
                std::thread::sleep(Duration::from_millis(rng.gen_range(0..=ms)));
            } else {
                // Wait for "ready", then let it run a random while.
                if !child.wait_for("ready") {
                    panic!("{what}: the child never got ready: {:?}", child.kill(&what));
                }
                ready_after = started.elapsed();
                set_up = true;
                std::thread::sleep(Duration::from_millis(rng.gen_range(20..250)));
            }
            let (lines, opened) = child.kill(&what);
            let killed = started.elapsed();
            if lines.iter().any(|l| l == "ready") {
                set_up = true;
            } else {
                before_ready += 1;
            }
            let killed_in_checkpoint = in_a_checkpoint(&lines);
            if killed_in_checkpoint {
                in_checkpoint += 1;
            }
            let (mut acked, mut observed) = (HashMap::new(), HashMap::new());
            for (th, seq) in pairs(&lines, "ack") {
                let e = acked.entry(th).or_insert(0);
                *e = seq.max(*e);
                acks += 1;
            }
            for ((th, seq), line) in pairs(&lines, "saw").zip(lines.iter().filter(|l| l.starts_with("saw "))) {
                let e = observed.entry(th).or_insert((0, ""));
                if seq > e.0 {
                    *e = (seq, line.as_str());
                }
                saws += 1;
            }

            // Reopen in the parent and check (a copy of the directory as the
            // crash left it is kept if the check fails).
            let copy = Copy::of(dir.path());
            let (db, rep) = Database::open_with(cfg.options(dir.path()), schema).unwrap();
            assert_eq!(rep.same_ts_conflicts, 0, "{what}: {rep:?}");
            // A kill tears tails; it cannot damage what was written (nor lose
            // what was acknowledged): `damaged` says a crash cannot explain
            // the directory, and `OnDamage::Refuse` would refuse to open it.
            let damage = rep.damaged.then(|| format!("recovery reports damage after a kill: {:?}", rep.dropped));
            let (acct, ackt, ctr) = (db.table("acct").unwrap(), db.table("acks").unwrap(), db.table("ctr").unwrap());
            let mut total = 0;
            let mut accounts = 0;
            let mut present: HashMap<u64, Vec<u64>> = HashMap::new();
            let mut counters: HashMap<u64, u64> = HashMap::new();
            let o = TxnOptions { read_only: true, ..TxnOptions::new(Isolation::Serializable) };
            let mut t = db.begin_with(o).unwrap();
            t.scan(db.primary(acct), .., None, |_, v| {
                total += num(v);
                accounts += 1;
                true
            })
            .unwrap();
            t.scan(db.primary(ackt), .., None, |k, v| {
                let k = k.to_u64().unwrap();
                assert_eq!(num(v), k & 0xffff_ffff, "{what}: ack row {k:x}");
                present.entry(k >> 32).or_default().push(k & 0xffff_ffff);
                true
            })
            .unwrap();
            t.scan(db.primary(ctr), .., None, |k, v| {
                counters.insert(k.to_u64().unwrap(), num(v));
                true
            })
            .unwrap();
            t.commit().unwrap();
            if accounts == 0 && !set_up {
                assert!(present.is_empty() && counters.is_empty(), "{what}: acks without accounts");
            } else {
                assert_eq!(accounts, ACCOUNTS, "{what}: the accounts are gone");
                assert_eq!(total, ACCOUNTS * START, "{what}: a transfer is there in part");
                set_up = true;
            }
            let mut lost: Vec<String> = damage.into_iter().collect();
            for th in 0..if set_up { WRITERS } else { 0 } {
                let mut seqs = present.remove(&th).unwrap_or_default();
                seqs.sort();
                let n = seqs.len() as u64;
                assert!(
                    seqs.iter().enumerate().all(|(j, &s)| s == j as u64 + 1),
                    "{what}: thread {th}'s commits are not a prefix"
                );
                assert_eq!(counters.get(&th), Some(&n), "{what}: thread {th}'s counter row is not its last ack");
                let (old, a, o) = (expected.get(&th).copied().unwrap_or(0), acked.get(&th), observed.get(&th));
                if n < old {
                    lost.push(format!("thread {th}: {old} recovered before, only {n} now"));
                }
                if let Some(&a) = a.filter(|&&a| a > n) {
                    lost.push(format!("thread {th}: acknowledged {a}, only {n} survived"));
                }
                if let Some(&(o, line)) = o.filter(|o| o.0 > n) {
                    lost.push(format!("thread {th}: a reader saw {o} committed ('{line}'), only {n} survived"));
                }
                expected.insert(th, n);
            }
            assert!(present.is_empty(), "{what}: acks of unknown threads {present:?}");
            let status = format!(
                "{what}: {} acknowledged, {} observed, opened after {opened:?}, killed after {killed:?}{}{}, \
                 {} replayed, dropped {:?}",
                pairs(&lines, "ack").count(),
                pairs(&lines, "saw").count(),
                if lines.iter().any(|l| l == "ready") { "" } else { " (before ready)" },
                if killed_in_checkpoint { " (in a checkpoint)" } else { "" },
                rep.replayed,
                rep.dropped
            );
            eprintln!("{status}");
            if !lost.is_empty() {
                lost_iters += 1;
                lost.push(copy.keep(&format!("{protocol}-{i}")));
                eprintln!("LOST: {what}: {lost:?}");
                losses.push(format!("{what}: {}", lost.join("; ")));
            }
            drop(db);
        }
        eprintln!(
            "{protocol}: {iters} crashes, {acks} acks, {saws} observations, {before_ready} killed before ready, \
             {in_checkpoint} inside an explicit checkpoint, {lost_iters} with lost commits or damage"
        );
    }
    assert!(
        losses.is_empty(),
        "acknowledged or observed commits lost (or damage reported) in {} of {total_iters} crashes:\n{}",
        losses.len(),
        losses.join("\n")
    );
}

#[test]
fn crash_during_loading_keeps_whole_acknowledged_loads() {
    let iters = (iterations(10) / 2).max(1);
    let mut rng = SmallRng::seed_from_u64(seed() ^ 0x10AD);
    let mut losses = Vec::new();
    let mut total_iters = 0;
    for protocol in protocols() {
        let mut dir = tempfile::tempdir().unwrap();
        let mut expected = 0; // batches that must be there
        let (mut before_open, mut before_first, mut loading, mut done, mut in_checkpoint) = (0, 0, 0, 0, 0);
        for i in 0..iters {
            total_iters += 1;
            let cfg = Config::draw(protocol, &mut rng);
            let what = format!("{protocol} load iteration {i} ({})", cfg.encode());
            let started = Instant::now();
            let child = spawn(dir.path(), &cfg, "load");
            // Half of the kills within the first 100 ms: mostly inside the
            // open (recovering the last crash, writing a checkpoint).
            let ms = if rng.gen_bool(0.5) { 100 } else { 500 };
            std::thread::sleep(Duration::from_millis(rng.gen_range(0..ms)));
            let (lines, opened) = child.kill(&what);
            let killed = started.elapsed();
            let acked = pairs_of(&lines, "load").max().map_or(0, |b| b + 1);
            let observed = pairs_of(&lines, "saw-load").max().map_or(0, |b| b + 1);
            if !lines.iter().any(|l| l == "opened") {
                before_open += 1;
            } else if lines.iter().any(|l| l == "loaded") {
                done += 1;
            } else if pairs_of(&lines, "load").next().is_none() {
                before_first += 1;
            } else {
                loading += 1;
            }
            if in_a_checkpoint(&lines) {
                in_checkpoint += 1;
            }

            let copy = Copy::of(dir.path());
            let (db, rep) = Database::open_with(cfg.options(dir.path()), schema).unwrap();
            assert_eq!(rep.same_ts_conflicts, 0, "{what}: {rep:?}");
            // A kill tears tails; it cannot damage what was written (nor lose
            // what was acknowledged): `damaged` says a crash cannot explain
            // the directory, and `OnDamage::Refuse` would refuse to open it.
            let damage = rep.damaged.then(|| format!("recovery reports damage after a kill: {:?}", rep.dropped));
            let load = db.table("load").unwrap();
            let mut rows: HashMap<u64, u64> = HashMap::new();
            let mut t = db.begin(Isolation::Serializable).unwrap();
            t.scan(db.primary(load), .., None, |k, v| {
                let k = k.to_u64().unwrap();
                let (b, i) = (k >> 32, k & 0xffff_ffff);
                assert!(i < LOAD_ROWS && v == load_value(b, i), "{what}: row {b}/{i} is wrong");
                *rows.entry(b).or_default() += 1;
                true
            })
            .unwrap();
            t.commit().unwrap();
            let n = rows.len() as u64;
            for (b, count) in &rows {
                assert!(*b < n, "{what}: batch {b} is there without an earlier one ({n} batches)");
                assert_eq!(*count, LOAD_ROWS, "{what}: batch {b} is there in part");
            }
            let mut lost: Vec<String> = damage.into_iter().collect();
            if n < expected {
                lost.push(format!("{expected} batches recovered before, only {n} now"));
            }
            if acked > n {
                lost.push(format!("{acked} batches acknowledged, only {n} survived"));
            }
            if observed > n {
                lost.push(format!("a reader saw {observed} batches, only {n} survived"));
            }
            eprintln!(
                "{what}: opened after {opened:?}, killed after {killed:?}, {} acknowledged, {n} there, {} replayed, \
                 dropped {:?}",
                pairs_of(&lines, "load").count(),
                rep.replayed,
                rep.dropped
            );
            if !lost.is_empty() {
                lost.push(copy.keep(&format!("{protocol}-load-{i}")));
                eprintln!("LOST: {what}: {lost:?}");
                losses.push(format!("{what}: {}", lost.join("; ")));
            }
            drop(db);
            expected = n;
            if n == LOAD_BATCHES {
                dir = tempfile::tempdir().unwrap();
                expected = 0;
            }
        }
        eprintln!(
            "{protocol} loads: {iters} crashes: {before_open} inside the open, {before_first} before the first \
             load committed, {loading} while loading, {done} after it, {in_checkpoint} inside an explicit checkpoint"
        );
    }
    assert!(
        losses.is_empty(),
        "acknowledged or observed loads lost (or damage reported) in {} of {total_iters} crashes:\n{}",
        losses.len(),
        losses.join("\n")
    );
}

/// Parses `<word> <n>` lines.
fn pairs_of<'a>(lines: &'a [String], word: &'a str) -> impl Iterator<Item = u64> + 'a {
    lines.iter().filter_map(move |l| {
        let mut w = l.split_whitespace();
        (w.next() == Some(word)).then(|| w.next().unwrap().parse().unwrap())
    })
}

/// The child's explicit checkpoint thread had begun a checkpoint and not
/// finished it when the child was killed.
fn in_a_checkpoint(lines: &[String]) -> bool {
    lines.iter().rev().find(|l| l.starts_with("checkpoint")).is_some_and(|l| l == "checkpoint")
}

/// A copy of a data directory as a crash left it, kept for inspection
/// (`multiverse recover`) when the checks after the crash fail.
struct Copy(tempfile::TempDir);

impl Copy {
    fn of(dir: &Path) -> Copy {
        let copy = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), copy.path().join(e.file_name())).unwrap();
            }
        }
        Copy(copy)
    }

    /// Keeps the copy (under the temporary directory) and says where.
    fn keep(self, name: &str) -> String {
        let to = std::env::temp_dir().join(format!("multiverse-crash-{}-{name}", std::process::id()));
        let from = self.0.keep();
        match std::fs::rename(&from, &to) {
            Ok(()) => format!("the directory as the crash left it: {}", to.display()),
            Err(_) => format!("the directory as the crash left it: {}", from.display()),
        }
    }
}
