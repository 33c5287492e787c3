//! Version reclamation.
//!
//! Hekaton hands the old versions of a terminated transaction to a garbage
//! collector that all threads run cooperatively (section 2.3). Here every
//! finishing transaction appends its garbage to one of a few sharded queues,
//! each entry stamped with a time after which no transaction can see it:
//!
//! * an old version replaced or deleted by a committed transaction: its End
//!   timestamp (the committer's end timestamp);
//! * a new version of an aborted transaction: the clock at the abort (every
//!   transaction that could still hold a pointer to it began before that).
//!
//! A version is reclaimed once its stamp is below the *watermark*: the
//! smallest begin timestamp of any open transaction (every present and future
//! reader reads at or after its begin timestamp, so none can see it). A
//! transaction that has ended and collects before closing its slot no
//! longer counts (`TxnTable::leave_watermark`): it reads nothing again, and
//! otherwise every collection held back every other for as long as it ran.
//! A version is unlinked from every index and its memory freed after an
//! epoch (crossbeam-epoch), because readers walk chains without locks.
//!
//! **The memory budget** (with [`crate::Options::memory_limit`]) counts a
//! version until it is freed, not until it is unlinked: the bytes a batch
//! gives back travel with it to the ready list and are released by the
//! collector that frees it. crossbeam's collector is process-wide, so a
//! thread pinned for long (in any database of the process) holds back the
//! frees here too; the budget then sees that memory, and writers are
//! refused with [`crate::Error::MemoryLimit`] instead of the process
//! growing unseen.
//!
//! A long-running reader holds the watermark back, so exactly the versions it
//! may still see (and those of later transactions) are kept; everything older
//! is reclaimed.
//!
//! **Who frees.** A collection hands crossbeam-epoch one deferred function
//! for its whole batch, and that function does not free: it moves the batch
//! to its shard's *ready* list, which the shard's own collector frees at its
//! next collection. crossbeam runs deferred functions on whichever thread
//! collects its global queue, so a per-version `defer(free)` had the other
//! worker free about half of a thread's versions: cross-thread frees in the
//! allocator, and memory that came back to its owner late and cold. Since a
//! thread keeps its transaction-table slot (and so its shard), the thread
//! that made and replaced most versions frees them and reuses that memory
//! while it is still in its cache. Measured on TPC-C (DBx1000 mix with
//! inserts, 2 threads): +8%, the stall on the first write into each new
//! version's memory going from 10% of the run's cycles to 7%.

use crate::breakdown::{self, Part};
use crate::memory::Budget;
use crate::obs::Metrics;
use crate::storage::version::{VPtr, Version};
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::table::Table;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

const SHARDS: usize = 16;
/// Versions unlinked together, their cache misses overlapped.
const PIPELINE: usize = 8;
/// A walk this long to unlink one version means its chain holds a backlog:
/// the collection goes on by sweeping (see `Gc::collect`).
const LONG_WALK: usize = 64;
/// Versions a sweep takes from the queue at a time.
const SWEEP_CHUNK: usize = 1 << 16;
/// A sweep of a backlog takes up to this many versions per step of the
/// longest walk seen (see `Gc::collect`).
const SWEEP_PER_STEP: usize = 2;
/// The batch a collection reserves room for up front (the cooperative
/// collections' budget is half of the MV family's queue threshold).
const BATCH_HINT: usize = 128;

/// One queued version.
#[derive(Clone, Copy)]
pub(crate) struct Garbage {
    /// Reclaimable once the watermark passes this time.
    pub(crate) ts: u64,
    pub(crate) table: u32,
    pub(crate) v: VPtr,
    /// The version's primary key hashed ([`Version::key_hash`]), which the
    /// writer had computed: the collector reaches its bucket in a primary
    /// hash index without reading the version's key first.
    pub(crate) hash: u64,
}

/// A shard's unlinked versions whose grace epoch has passed: nothing can
/// reach them any more; they wait for the shard's collector to free them.
///
/// Shared (`Arc`) with the deferred functions, which may run after the
/// database is gone; whatever is left when the last owner drops is freed then.
struct Ready {
    list: Mutex<ReadyList>,
    /// The shard's versions unlinked and not yet freed (on the list or
    /// still waiting for their epoch).
    unfreed: AtomicUsize,
    /// The memory budget the list's bytes are given back to once freed.
    budget: Option<Arc<Budget>>,
}

/// The versions of a ready list, and the bytes they count against the
/// memory budget (0 without a limit).
#[derive(Default)]
struct ReadyList {
    versions: Vec<VPtr>,
    bytes: usize,
}

impl Ready {
    /// Frees every version on the list and gives its bytes back to the
    /// memory budget; returns how many it freed.
    fn free_all(&self) -> usize {
        let ReadyList { versions, bytes } = std::mem::take(&mut *self.list.lock());
        let n = versions.len();
        // Relaxed: statistics only.
        self.unfreed.fetch_sub(n, Ordering::Relaxed);
        // SAFETY: only `collect`'s deferred function puts versions here,
        // after they were unlinked from every index and every thread pinned
        // at the time has unpinned: no thread can reach them, and each is on
        // the list once (a version is unlinked once).
        unsafe { Version::free_all(versions.into_iter().map(|p| p.0)) };
        if let Some(b) = &self.budget {
            b.release(bytes);
        }
        n
    }

    /// Versions unlinked whose epoch has not passed yet (not on the list).
    fn waiting(&self) -> usize {
        let on_list = self.list.lock().versions.len();
        // Relaxed: statistics only (a hint for `Gc::settle`).
        self.unfreed.load(Ordering::Relaxed).saturating_sub(on_list)
    }
}

impl Drop for Ready {
    fn drop(&mut self) {
        self.free_all();
    }
}

/// One shard: its queue of stamped garbage and its ready list.
struct Shard {
    queue: Mutex<Queue>,
    ready: Arc<Ready>,
}

/// A shard's garbage, oldest first, and what its collections learnt about
/// the chains.
#[derive(Default)]
struct Queue {
    items: VecDeque<Garbage>,
    backlog: Backlog,
}

/// A backlog in the chains (see `Gc::collect`): the longest walk to a
/// queued version seen when it was found (0: none), and how many versions
/// its last sweep took (or its finder unlinked).
#[derive(Default)]
struct Backlog {
    walk: usize,
    swept: usize,
}

impl Backlog {
    /// The collectable versions a sweep waits for: twice its last one, or
    /// enough to pay for the walk, whichever is fewer.
    fn due(&self) -> usize {
        (2 * self.swept).max(1).min(SWEEP_PER_STEP * self.walk)
    }
}

/// The sharded garbage queues.
pub(crate) struct Gc {
    shards: Box<[CachePadded<Shard>]>,
    /// The memory budget: what a collection unlinks still counts until the
    /// ready list that frees it gives its bytes back (module docs).
    budget: Option<Arc<Budget>>,
    /// Metric handles (the `metrics` feature).
    obs: Metrics,
}

impl Gc {
    pub(crate) fn new(budget: Option<Arc<Budget>>, obs: Metrics) -> Gc {
        Gc {
            obs,
            shards: (0..SHARDS)
                .map(|_| {
                    let ready = Ready { list: Mutex::default(), unfreed: AtomicUsize::new(0), budget: budget.clone() };
                    CachePadded::new(Shard { queue: Mutex::default(), ready: Arc::new(ready) })
                })
                .collect(),
            budget,
        }
    }

    /// Queues garbage in shard `s`; returns the shard's length.
    pub(crate) fn push(&self, s: usize, items: impl Iterator<Item = Garbage>) -> usize {
        let mut q = self.shards[s % SHARDS].queue.lock();
        q.items.extend(items);
        q.items.len()
    }

    /// Frees the shard's ready list, then reclaims up to `budget` entries of
    /// shard `s` whose stamp is below `watermark`: unlinks them now and
    /// frees them at a later collection of the shard, once an epoch has
    /// passed. Skips the shard if another thread is collecting it. Returns
    /// the number of versions unlinked.
    ///
    /// Versions are unlinked a few at a time, each by a walk of its chains.
    /// When one walk is long (`LONG_WALK`), the chains hold a backlog (a
    /// long reader held the watermark back, or collection fell behind): the
    /// queue is oldest first and inserts prepend, so each walk would pass
    /// the rest of the backlog, and the backlog's collection would be
    /// quadratic in it (measured: a bank test's final collection ran for
    /// over 20 minutes). The collection then sweeps instead: takes versions
    /// from the queue in large chunks and unlinks them with one walk per
    /// chain for the chunk (`Table::unlink_many`).
    ///
    /// A backlog's sweeps are paid for by what they collect. Once a walk
    /// was long, the shard's collections walk nothing until the queue
    /// holds twice as many collectable versions as the last sweep took (or
    /// [`SWEEP_PER_STEP`] per step of that walk, if fewer), and a sweep then
    /// takes them all (up to that many per step, or `budget` if more): the
    /// sweeps grow geometrically while the watermark creeps, so a backlog
    /// of `L` versions costs `O(L log L)` steps, not `O(L)` per collection.
    /// A sweep that took a whole walk's worth, or emptied the queue, ends
    /// the backlog: the next collection measures the walks afresh. With
    /// more threads than cores, a descheduled transaction holds the
    /// watermark for a time slice, every hot chain grows by thousands of
    /// versions, and the watermark then moves on a few versions at a time:
    /// a collection of `budget` versions walked a hot chain of thousands
    /// for each handful it freed (YCSB at θ=0.9, 8 threads on 2 cores: 155
    /// µs of collection per committed transaction, 70% of the cycles in
    /// those walks). A full collection (`budget` unbounded) never waits.
    pub(crate) fn collect<'t>(
        &self,
        s: usize,
        watermark: u64,
        budget: usize,
        table: impl Fn(u32) -> &'t Table,
    ) -> usize {
        let _timed = breakdown::span(Part::Gc);
        let shard = &self.shards[s % SHARDS];
        let Some(mut queue) = shard.queue.try_lock() else { return 0 };
        let Queue { items: q, backlog } = &mut *queue;
        let freed = shard.ready.free_all();
        let guard = crossbeam_epoch::pin();
        let mut n = 0;
        // Sized for a cooperative collection's budget: growing it by
        // doubling was five allocations per collection.
        let mut batch = Vec::with_capacity(budget.min(BATCH_HINT));
        // Bytes the batch counts against the memory budget (with a limit),
        // given back when it is freed.
        let mut released = 0;
        // Unlinking is a chain of cache misses per version (its links, its
        // bucket, the chain up to it), and garbage is cold by now: take the
        // versions a few at a time and hint each step for all of them before
        // the next, so that their misses overlap. The primary bucket comes
        // from the writer's hash, so its miss overlaps the version's.
        let mut group = [VPtr(std::ptr::null_mut()); PIPELINE];
        let mut tables = [0u32; PIPELINE];
        let mut hashes = [0u64; PIPELINE];
        // The chains hold a backlog: no walks of single versions.
        let mut sweep = backlog.walk > 0;
        let mut longest = 0;
        while n < budget && !sweep {
            let mut k = 0;
            while k < PIPELINE && n + k < budget {
                match q.front() {
                    Some(&g) if g.ts < watermark => {
                        (group[k], tables[k], hashes[k]) = (g.v, g.table, g.hash);
                        q.pop_front();
                        Table::prefetch_version(g.v.0);
                        table(g.table).prefetch_primary(g.hash);
                        k += 1;
                    }
                    _ => break,
                }
            }
            for j in 0..k {
                // SAFETY: queued versions are linked and alive until their
                // collector unlinks them (below); we are pinned.
                unsafe { table(tables[j]).prefetch_secondaries(group[j].0) };
            }
            for j in 0..k {
                // SAFETY: the version is still linked (only the collector
                // unlinks, once) and alive; we are pinned while unlinking.
                // `hashes[j]` is the version's `key_hash`, the primary
                // index's hash of it.
                let walked = unsafe { table(tables[j]).unlink_all(group[j].0, Some(hashes[j])) };
                longest = longest.max(walked);
                sweep |= walked >= LONG_WALK;
                if self.budget.is_some() {
                    // SAFETY: unlinked, but alive until the epoch passes; we are pinned.
                    released += table(tables[j]).charged(unsafe { &*group[j].0 });
                }
                batch.push(group[j]);
            }
            n += k;
            if k < PIPELINE {
                break;
            }
        }
        if sweep && backlog.walk == 0 {
            *backlog = Backlog { walk: longest, swept: n };
        }
        // Collectable versions: each pusher stamps in increasing order, so
        // the queue is in stamp order but where two threads share a shard,
        // and this is an estimate, which is all the choice needs.
        let ready = if sweep { q.partition_point(|g| g.ts < watermark) } else { 0 };
        if sweep && budget != usize::MAX && ready < backlog.due() {
            // Not yet worth a walk of the backlog's chains.
            sweep = false;
        }
        if sweep {
            let whole = backlog.walk.saturating_mul(SWEEP_PER_STEP);
            let take = if budget == usize::MAX { usize::MAX } else { ready.min(whole.max(budget)) };
            let budget = n.saturating_add(take);
            let (mut chunk, mut chains, mut set, mut vs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            while n < budget {
                chunk.clear();
                while chunk.len() < SWEEP_CHUNK && n + chunk.len() < budget {
                    match q.front() {
                        Some(&g) if g.ts < watermark => {
                            chunk.push(g);
                            q.pop_front();
                        }
                        _ => break,
                    }
                }
                if chunk.is_empty() {
                    break;
                }
                chunk.sort_unstable_by_key(|g| g.table);
                for run in chunk.chunk_by(|a, b| a.table == b.table) {
                    vs.clear();
                    vs.extend(run.iter().map(|g| g.v.0));
                    // SAFETY: as for `unlink_all` above, for every version of
                    // the run: queued, so linked and alive until its
                    // collector (we, who popped it) unlinks it; we are pinned.
                    unsafe { table(run[0].table).unlink_many(&vs, &mut chains, &mut set) };
                    if self.budget.is_some() {
                        let t = table(run[0].table);
                        // SAFETY: unlinked, but alive until the epoch passes; we are pinned.
                        released += vs.iter().map(|&v| t.charged(unsafe { &*v })).sum::<usize>();
                    }
                }
                n += chunk.len();
                batch.extend(chunk.iter().map(|g| g.v));
                if chunk.len() < SWEEP_CHUNK {
                    break;
                }
            }
            backlog.swept = n;
            if n >= whole || q.is_empty() {
                *backlog = Backlog::default();
            }
        }
        if n > 0 {
            self.obs.collected(n);
            // Relaxed: statistics only.
            shard.ready.unfreed.fetch_add(n, Ordering::Relaxed);
            let ready = Arc::clone(&shard.ready);
            // SAFETY: the batch is unlinked from every index, so only threads
            // pinned before this point can still reach its versions; the
            // epoch scheme runs the function after all of them have
            // unpinned, and it only moves the pointers and their byte count
            // (the `Arc` keeps the list alive). No open transaction holds
            // them in a set: their stamps are below every open
            // transaction's begin timestamp.
            unsafe {
                guard.defer_unchecked(move || {
                    let mut l = ready.list.lock();
                    l.versions.extend(batch);
                    l.bytes += released;
                })
            };
            guard.flush();
        }
        if let (Some(b), true) = (&self.budget, n + freed > 0) {
            self.obs.memory_used(|| b.used());
        }
        n
    }

    /// Frees now what the collections unlinked, as far as the epoch allows:
    /// steps crossbeam's global epoch (each pin and flush tries once, and
    /// runs the deferred functions whose epoch has passed; a thread pinned
    /// in an older epoch stops it), then frees every shard's ready list.
    /// For full collections ([`crate::Database::collect_garbage`]); the
    /// cooperative ones free at their shard's next collection.
    pub(crate) fn settle(&self) {
        // Two steps pass a batch's epoch; a collect runs a few of the
        // global queue's batches at a time, so a few more may be needed.
        for _ in 0..8 {
            if self.shards.iter().all(|s| s.ready.waiting() == 0) {
                break;
            }
            crossbeam_epoch::pin().flush();
        }
        for s in self.shards.iter() {
            s.ready.free_all();
        }
        if let Some(b) = &self.budget {
            self.obs.memory_used(|| b.used());
        }
    }

    /// Number of queued entries.
    pub(crate) fn pending(&self) -> usize {
        self.shards.iter().map(|q| q.queue.lock().items.len()).sum()
    }

    /// Number of versions unlinked and not yet freed.
    pub(crate) fn unfreed(&self) -> usize {
        // Relaxed: statistics only.
        self.shards.iter().map(|q| q.ready.unfreed.load(Ordering::Relaxed)).sum()
    }

    /// Number of shards.
    pub(crate) fn shards(&self) -> usize {
        SHARDS
    }
}
