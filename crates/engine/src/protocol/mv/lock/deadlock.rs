//! MV/L's deadlock detection (Hekaton section 4.4): a snapshot of the
//! blocked transactions and their wait-for edges (dependencies, read
//! locks, bucket and range locks), Tarjan's strongly connected
//! components, and a victim per cycle.

use super::*;
use crate::protocol::deadlock::{cycle_in, tarjan};

/// A blocked transaction as the detector saw it.
struct Node {
    slot: u32,
    id: u64,
    blocked_seq: u64,
    /// Transactions waiting on this one: WaitingTxnList, and the writers of
    /// the versions it holds read locks on.
    waited_by: Vec<u64>,
}

/// Reads what slot `i` publishes, if its occupant is blocked. The caller
/// holds the slot's `waits` lock (`w`), which keeps a blocked transaction
/// blocked and its read-locked versions alive.
fn node_of(txns: &TxnTable, i: u32, w: &crate::txn::table::WaitInfo) -> Option<Node> {
    if !w.blocked {
        return None;
    }
    let mut waited_by = w.waiting_txns.clone();
    for p in &w.read_locks {
        // SAFETY: read locked by a blocked transaction, which cannot release
        // it while we hold its `waits` lock: a latest version, not garbage.
        // Acquire: see the writer that installed itself.
        if let Some(writer) = writer_of_end(unsafe { &*p.0 }.end.load(Ordering::Acquire)) {
            waited_by.push(writer);
        }
    }
    Some(Node { slot: i, id: txns.id_of(i), blocked_seq: w.blocked_seq, waited_by })
}

/// Edges of the wait-for graph among `nodes`: `adj[a]` lists the nodes that
/// node `a` waits for (an edge from T2 to T1 when T2 waits for T1).
fn edges(nodes: &[Node]) -> Vec<Vec<usize>> {
    let index: HashMap<u64, usize> = nodes.iter().enumerate().map(|(k, n)| (n.id, k)).collect();
    let mut adj = vec![Vec::new(); nodes.len()];
    for (k, n) in nodes.iter().enumerate() {
        for t2 in &n.waited_by {
            if let Some(&j) = index.get(t2) {
                if j != k && !adj[j].contains(&k) {
                    adj[j].push(k);
                }
            }
        }
    }
    adj
}

/// Deadlock detection (section 4.4). Builds the wait-for graph of the
/// blocked transactions while normal processing goes on, finds its
/// strongly connected components, and for each one with a cycle freezes its
/// members (their `waits` locks, in slot order), checks they are still
/// blocked and still wait for each other, and marks the victim: the member
/// of a cycle that blocked last, the one whose wait closed it. Returns true if it broke a deadlock. Only one
/// detector runs at a time; a call that finds another one running returns.
///
/// ```
/// use multiverse::research::detect_deadlocks;
/// use multiverse::{Database, Options, Protocol};
///
/// let db = Database::new(Options { protocol: Protocol::MvLock, ..Options::default() }).unwrap();
/// // Blocked transactions run it by themselves; with nothing blocked there
/// // is no deadlock to break.
/// assert!(!detect_deadlocks(&db));
/// ```
pub fn detect_deadlocks(db: &Shared) -> bool {
    let txns = &db.txns;
    let Some(_one) = txns.detector.try_lock() else { return false };
    let _guard = crossbeam_epoch::pin();
    // 1-3: nodes, explicit and implicit edges.
    let nodes: Vec<Node> = (0..txns.high_water() as u32)
        .filter_map(|i| {
            let w = txns.slot(i).waits.lock();
            node_of(txns, i, &w)
        })
        .collect();
    if nodes.len() < 2 {
        return false;
    }
    let adj = edges(&nodes);
    for scc in tarjan(&adj) {
        if scc.len() < 2 {
            continue;
        }
        // Verify: freeze the members and rebuild their edges.
        let mut members: Vec<&Node> = scc.iter().map(|&k| &nodes[k]).collect();
        members.sort_by_key(|n| n.slot);
        let guards: Vec<_> = members.iter().map(|n| txns.slot(n.slot).waits.lock()).collect();
        let now: Option<Vec<Node>> =
            members.iter().zip(&guards).map(|(n, w)| node_of(txns, n.slot, w).filter(|m| m.id == n.id)).collect();
        let Some(now) = now else { continue }; // one of them went on: no deadlock here
        let Some(cycle) = cycle_in(&edges(&now)) else { continue };
        let last = cycle.iter().map(|&k| &now[k]).max_by_key(|n| n.blocked_seq).expect("a cycle has members");
        // Release: pairs with the Acquire in the victim's wait loop.
        txns.slot(last.slot).victim.store(true, Ordering::Release);
        drop(guards);
        return true;
    }
    false
}
