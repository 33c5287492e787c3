//! Finds the cycles of the dependency graph and classifies them.
//!
//! Every strongly connected component with more than one transaction holds
//! at least one cycle. For each, the checker looks for the most severe kind
//! of cycle it contains, in this order, and reports one short example:
//!
//! 1. **G0**: a cycle of ww edges only (a cycle of the component's ww subgraph);
//! 2. **G1c**: a cycle of ww and wr edges;
//! 3. **G-single**: an anti-dependency `u -> v` plus a ww/wr path `v ~> u`
//!    (breadth-first from each anti-dependency target; bounded by
//!    [`crate::Limits::search_budget`]);
//! 4. **G2-item**: a cycle of ww, wr and item rw edges;
//! 5. **G2**: any cycle (it involves a predicate anti-dependency).
//!
//! Whether a component is allowed depends on the claimed level, and the
//! levels' forbidden sets are not nested along that order once predicate
//! anti-dependencies count (snapshot forbids a cycle with one predicate
//! anti-dependency but allows write skew; repeatable read the reverse). So
//! each component is first searched for a cycle the claimed level forbids:
//! G0/G1c at every level; at repeatable read, a cycle without predicate
//! anti-dependencies (Hekaton's repeatable read is read stability only, so
//! it allows a cycle that mixes item and predicate anti-dependencies, which
//! Adya's PL-2.99 would forbid; we follow the paper); at snapshot, a cycle with exactly one anti-dependency (G-single); at
//! serializable, any cycle. Only if there is none is the most severe allowed
//! cycle reported, for information. The example reported is classified by
//! its own edges, so it is always truthful, even when a budget cut a search
//! short.

use crate::graph::{Cycle, Dep, Edge, Graph, Search};
use crate::model::{key_name, FxSet, Model};
use crate::report::{Anomaly, Class, Findings, Stats};
use multiverse::Isolation;

/// Classifies every cyclic component of `g`, adding one anomaly per component.
pub(crate) fn find_cycles(
    m: &Model<'_>,
    g: &Graph,
    search: &mut Search,
    found: &mut Findings,
    stats: &mut Stats,
    claimed: Isolation,
) {
    let id = |v: u32| m.txn(v).id;
    classify_cycles(g, search, found, stats, claimed, &id, &|c: &Cycle| cycle_anomaly(m, c));
}

/// [`find_cycles`] over any graph: `id` names a node's transaction,
/// `describe` explains a cycle (its class is set here).
pub(crate) fn classify_cycles(
    g: &Graph,
    search: &mut Search,
    found: &mut Findings,
    stats: &mut Stats,
    claimed: Isolation,
    id: &dyn Fn(u32) -> u64,
    describe: &dyn Fn(&Cycle) -> Anomaly,
) {
    let (sccs, comp) = search.cyclic_components(g);
    stats.cyclic_components = sccs.len();
    for (c, nodes) in sccs.iter().enumerate() {
        let within = Within { comp: &comp, c: c as u32 };
        let cycle = match forbidden_cycle(g, search, &within, nodes, claimed) {
            Some(c) => Some((class_of(&c), c)),
            None => worst_cycle(g, search, &within, nodes).map(|c| {
                // A cycle whose only anti-dependency is a predicate one is
                // G-single and G2 at once; where G-single is forbidden the
                // search above would have returned it, so here it is G2.
                let class = class_of(&c);
                (if class.forbidden_at(claimed) { Class::G2 } else { class }, c)
            }),
        };
        match cycle {
            Some((class, mut cycle)) => {
                // Start the cycle at its smallest transaction id.
                let first = (0..cycle.len()).min_by_key(|&i| id(cycle[i].0)).unwrap_or(0);
                cycle.rotate_left(first);
                found.add(class, || describe(&cycle));
            }
            None => {
                // Cannot happen (a component always has a cycle), but never panic on it.
                let ids: Vec<u64> = nodes.iter().map(|&v| id(v)).collect();
                found.note(Class::G2, &ids, || format!("a cycle among {} transactions (no example found)", ids.len()));
            }
        }
    }
    stats.search_truncated = search.exhausted;
}

/// Membership in one strongly connected component.
struct Within<'a> {
    comp: &'a [u32],
    c: u32,
}

impl Within<'_> {
    fn has(&self, e: &Edge) -> bool {
        self.comp[e.to as usize] == self.c
    }
}

/// The class of a cycle, from its edges.
fn class_of(cycle: &Cycle) -> Class {
    let anti = cycle.iter().filter(|(_, e)| e.dep.is_anti()).count();
    let predicate = cycle.iter().any(|(_, e)| e.dep == Dep::Prw);
    if cycle.iter().all(|(_, e)| e.dep == Dep::Ww) {
        Class::G0
    } else if anti == 0 {
        Class::G1c
    } else if anti == 1 {
        Class::GSingle
    } else if !predicate {
        Class::G2Item
    } else {
        Class::G2
    }
}

/// A short cycle of component `nodes` that the claimed level forbids, if any.
fn forbidden_cycle(
    g: &Graph,
    search: &mut Search,
    within: &Within<'_>,
    nodes: &[u32],
    claimed: Isolation,
) -> Option<Cycle> {
    for max in [Dep::Ww, Dep::Wr] {
        if let Some(c) = cycle_in(g, search, nodes, |_, e| within.has(e) && e.dep <= max) {
            return Some(c);
        }
    }
    match claimed {
        Isolation::ReadCommitted => None,
        // Hekaton's repeatable read is read stability (section 3.4): every
        // cycle without a predicate anti-dependency is forbidden, phantoms
        // (predicate anti-dependencies) are not prevented.
        Isolation::RepeatableRead => single_anti_item(g, search, within, nodes)
            .or_else(|| cycle_in(g, search, nodes, |_, e| within.has(e) && e.dep <= Dep::Rw)),
        Isolation::Snapshot => single_anti(g, search, within, nodes),
        Isolation::Serializable => {
            single_anti(g, search, within, nodes).or_else(|| cycle_in(g, search, nodes, |_, e| within.has(e)))
        }
    }
}

/// A short cycle of the most severe class found in the component `nodes`.
fn worst_cycle(g: &Graph, search: &mut Search, within: &Within<'_>, nodes: &[u32]) -> Option<Cycle> {
    for max in [Dep::Ww, Dep::Wr] {
        if let Some(c) = cycle_in(g, search, nodes, |_, e| within.has(e) && e.dep <= max) {
            return Some(c);
        }
    }
    if let Some(c) = single_anti(g, search, within, nodes) {
        return Some(c);
    }
    for max in [Dep::Rw, Dep::Prw] {
        if let Some(c) = cycle_in(g, search, nodes, |_, e| within.has(e) && e.dep <= max) {
            return Some(c);
        }
    }
    None
}

/// A short cycle of the subgraph of `nodes` and the edges `keep` accepts.
fn cycle_in(g: &Graph, search: &mut Search, nodes: &[u32], keep: impl Fn(u32, &Edge) -> bool) -> Option<Cycle> {
    let subs = search.components(g, nodes, &keep);
    let sub = subs.into_iter().next()?;
    // Breadth-first from a few nodes; keep the shortest cycle.
    sub.iter().take(3).filter_map(|&s| search.cycle_through(g, s, &keep)).min_by_key(|c| c.len())
}

/// A cycle with exactly one anti-dependency, an item one.
fn single_anti_item(g: &Graph, search: &mut Search, within: &Within<'_>, nodes: &[u32]) -> Option<Cycle> {
    single_anti_where(g, search, |e| within.has(e), nodes, |d| d == Dep::Rw)
}

/// A cycle with exactly one anti-dependency (item or predicate).
fn single_anti(g: &Graph, search: &mut Search, within: &Within<'_>, nodes: &[u32]) -> Option<Cycle> {
    single_anti_where(g, search, |e| within.has(e), nodes, Dep::is_anti)
}

/// A cycle with exactly one anti-dependency: for each anti-dependency
/// target `v`, a breadth-first search over ww/wr edges from `v` that stops
/// at any source of an anti-dependency into `v`.
fn single_anti_where(
    g: &Graph,
    search: &mut Search,
    within: impl Fn(&Edge) -> bool,
    nodes: &[u32],
    anti: impl Fn(Dep) -> bool,
) -> Option<Cycle> {
    let mut antis: Vec<(u32, u32, Edge)> = Vec::new();
    for &u in nodes {
        for e in g.out(u) {
            if anti(e.dep) && within(e) {
                antis.push((e.to, u, *e));
            }
        }
    }
    antis.sort_unstable_by_key(|&(v, u, e)| (v, u, e.dep));
    let mut sources = FxSet::default();
    for group in antis.chunk_by(|a, b| a.0 == b.0) {
        let v = group[0].0;
        sources.clear();
        sources.extend(group.iter().map(|&(_, u, _)| u));
        let keep = |_: u32, e: &Edge| within(e) && e.dep <= Dep::Wr;
        if let Some(mut path) = search.path(g, v, keep, |e| sources.contains(&e.to), true) {
            let u = path.last().expect("a path has a hop").1.to;
            let &(_, _, anti) = group.iter().find(|&&(_, s, _)| s == u).expect("u is a source");
            path.push((u, anti));
            return Some(path);
        }
        if search.exhausted {
            return None;
        }
    }
    None
}

/// Describes a cycle: the one-line summary and what each edge means.
fn cycle_anomaly(m: &Model<'_>, cycle: &Cycle) -> Anomaly {
    let ids: Vec<u64> = cycle.iter().map(|&(v, _)| m.txn(v).id).collect();
    let mut summary = String::new();
    let mut details = Vec::new();
    for &(v, e) in cycle {
        let (from, to) = (m.txn(v).id, m.txn(e.to).id);
        let key = key_name(&m.names[e.key as usize]);
        summary.push_str(&format!("T{from} -{}({key})-> ", e.dep.label()));
        details.push(match e.dep {
            Dep::Ww => format!("T{from} wrote {key}; T{to} wrote a later version"),
            Dep::Wr => format!("T{to} read T{from}'s version of {key}"),
            Dep::Rw => format!("T{from} read {key}; T{to} wrote the next version"),
            Dep::Prw => format!("T{from} found no row at {key} (lookup or scan); T{to} wrote the next version"),
        });
    }
    summary.push_str(&format!("T{}", ids[0]));
    Anomaly { class: Class::G2, txns: ids, summary, details }
}
