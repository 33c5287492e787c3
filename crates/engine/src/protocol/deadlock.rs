//! The wait-for graph both locking families search for deadlocks: MV/L's
//! detector (Hekaton section 4.4, `mv::lock::deadlock`) and 1V's
//! (`lock_1v::wait`) each snapshot their blocked transactions and the
//! edges between them in their own way, then look for cycles here:
//! Tarjan's strongly connected components, and a cycle inside one.

use std::collections::HashMap;

/// A wait-for graph over transaction ids: an edge from T2 to T1 when T2
/// waits for T1. Edges to ids that are not nodes (transactions that are
/// not blocked, so on no cycle) are dropped.
#[derive(Default)]
pub(crate) struct WaitsFor {
    ids: Vec<u64>,
    index: HashMap<u64, usize>,
    edges: Vec<(u64, u64)>,
}

impl WaitsFor {
    /// Adds the blocked transaction `id`.
    pub(crate) fn node(&mut self, id: u64) {
        self.index.entry(id).or_insert_with(|| {
            self.ids.push(id);
            self.ids.len() - 1
        });
    }

    /// `waiter` waits for `holder`.
    pub(crate) fn edge(&mut self, waiter: u64, holder: u64) {
        self.edges.push((waiter, holder));
    }

    /// The strongly connected component of more than one node that holds
    /// `id`: the transactions on a cycle of waits with it (every member
    /// reaches every other), or nothing.
    pub(crate) fn cycle_with(&self, id: u64) -> Option<Vec<u64>> {
        let mut adj = vec![Vec::new(); self.ids.len()];
        for (w, h) in &self.edges {
            if let (Some(&a), Some(&b)) = (self.index.get(w), self.index.get(h)) {
                if a != b && !adj[a].contains(&b) {
                    adj[a].push(b);
                }
            }
        }
        let me = *self.index.get(&id)?;
        tarjan(&adj)
            .into_iter()
            .find(|c| c.len() > 1 && c.contains(&me))
            .map(|c| c.iter().map(|&k| self.ids[k]).collect())
    }
}

/// Strongly connected components of a directed graph (Tarjan, 1972),
/// iteratively, in reverse topological order.
pub(crate) fn tarjan(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const NONE: usize = usize::MAX;
    let n = adj.len();
    let (mut index, mut low) = (vec![NONE; n], vec![0; n]);
    let mut on_stack = vec![false; n];
    let (mut stack, mut out, mut next) = (Vec::new(), Vec::new(), 0);
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        // Call stack of (node, position in its edge list).
        let mut calls = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut pos)) = calls.last_mut() {
            if let Some(&w) = adj[v].get(*pos) {
                *pos += 1;
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut scc = Vec::new();
                loop {
                    let w = stack.pop().expect("v is on the stack");
                    on_stack[w] = false;
                    scc.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(scc);
            }
        }
    }
    out
}

/// A cycle in a graph in which every node has an edge to another node:
/// follow first edges until a node repeats.
pub(crate) fn cycle_in(adj: &[Vec<usize>]) -> Option<Vec<usize>> {
    let start = (0..adj.len()).find(|&k| !adj[k].is_empty())?;
    let mut seen = vec![usize::MAX; adj.len()];
    let mut path = Vec::new();
    let mut v = start;
    loop {
        if seen[v] != usize::MAX {
            return Some(path[seen[v]..].to_vec());
        }
        seen[v] = path.len();
        path.push(v);
        v = *adj[v].first()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sccs(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
        let mut v: Vec<Vec<usize>> = tarjan(adj)
            .into_iter()
            .map(|mut s| {
                s.sort();
                s
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn tarjan_finds_components() {
        // 0 -> 1 -> 2 -> 0, 2 -> 3, 3 -> 4 -> 3, 5 alone.
        let adj = vec![vec![1], vec![2], vec![0, 3], vec![4], vec![3], vec![]];
        assert_eq!(sccs(&adj), vec![vec![0, 1, 2], vec![3, 4], vec![5]]);
        // A chain has only singletons.
        let chain = vec![vec![1], vec![2], vec![]];
        assert_eq!(sccs(&chain), vec![vec![0], vec![1], vec![2]]);
        // Reverse topological order: a component comes after those it reaches.
        let order = tarjan(&adj);
        let pos = |x: usize| order.iter().position(|s| s.contains(&x)).unwrap();
        assert!(pos(3) < pos(0));
    }

    #[test]
    fn cycles_are_found_from_any_start() {
        let adj = vec![vec![1], vec![2], vec![1]];
        assert_eq!(cycle_in(&adj), Some(vec![1, 2]));
        assert_eq!(cycle_in(&[vec![], vec![]]), None);
    }

    #[test]
    fn a_waiter_finds_the_cycle_it_is_on() {
        let mut g = WaitsFor::default();
        for id in [10, 20, 30, 40] {
            g.node(id);
        }
        // 10 -> 20 -> 30 -> 10; 40 waits for 10 but nobody for 40; 99 is running.
        for (w, h) in [(10, 20), (20, 30), (30, 10), (40, 10), (20, 99)] {
            g.edge(w, h);
        }
        let mut c = g.cycle_with(30).unwrap();
        c.sort();
        assert_eq!(c, vec![10, 20, 30]);
        assert_eq!(g.cycle_with(40), None);
        assert_eq!(g.cycle_with(99), None);
    }
}
