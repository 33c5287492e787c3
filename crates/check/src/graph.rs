//! The direct serialization graph: compact adjacency lists, iterative Tarjan
//! strongly connected components, and breadth-first shortest cycles.
//!
//! Nothing here recurses, so a graph of millions of transactions cannot
//! overflow the stack. Searches restricted to a subgraph reuse their arrays
//! and reset only what they touched, so many small searches stay cheap.

use std::collections::VecDeque;

/// The kind of a dependency edge, from the least to the most permissive
/// (the order the cycle classification relies on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Dep {
    /// Write-write: the target wrote the next version (or a later one).
    Ww = 0,
    /// Write-read: the target read the source's version.
    Wr = 1,
    /// Item anti-dependency: the source read a version the target overwrote.
    Rw = 2,
    /// Predicate anti-dependency: the source's scan missed a key (or version)
    /// that the target wrote.
    Prw = 3,
}

impl Dep {
    /// True for the two anti-dependency kinds.
    pub(crate) fn is_anti(self) -> bool {
        self >= Dep::Rw
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Dep::Ww => "ww",
            Dep::Wr => "wr",
            Dep::Rw => "rw",
            Dep::Prw => "prw",
        }
    }
}

/// An edge to `to`, labelled with its kind and (for reports) one key behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Edge {
    pub(crate) to: u32,
    pub(crate) dep: Dep,
    pub(crate) key: u32,
}

/// Adjacency lists in one array; each node's edges are sorted by target,
/// then by kind, with one edge kept per (target, kind): the one with the
/// smallest key id, so that reports are deterministic.
pub(crate) struct Graph {
    start: Vec<usize>,
    edges: Vec<Edge>,
}

impl Graph {
    /// Builds the graph over nodes `0..n` from `(source, edge)` pairs.
    pub(crate) fn build(n: usize, mut raw: Vec<(u32, Edge)>) -> Graph {
        raw.sort_unstable_by_key(|&(from, e)| (from, e.to, e.dep, e.key));
        raw.dedup_by_key(|&mut (from, e)| (from, e.to, e.dep));
        let mut start = vec![0usize; n + 1];
        for &(from, _) in &raw {
            start[from as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let edges = raw.into_iter().map(|(_, e)| e).collect();
        Graph { start, edges }
    }

    /// Number of nodes.
    pub(crate) fn nodes(&self) -> usize {
        self.start.len() - 1
    }

    /// The edges leaving `v`.
    pub(crate) fn out(&self, v: u32) -> &[Edge] {
        &self.edges[self.start[v as usize]..self.start[v as usize + 1]]
    }

    /// Edge counts by kind.
    pub(crate) fn counts(&self) -> [usize; 4] {
        let mut c = [0; 4];
        for e in &self.edges {
            c[e.dep as usize] += 1;
        }
        c
    }
}

/// A cycle: each hop is a node and the edge it leaves by; the last edge
/// leads back to the first node.
pub(crate) type Cycle = Vec<(u32, Edge)>;

const UNSEEN: u32 = u32::MAX;

/// Reusable state for Tarjan's algorithm and breadth-first search.
pub(crate) struct Search {
    index: Vec<u32>,
    low: Vec<u32>,
    on_stack: Vec<bool>,
    touched: Vec<u32>,
    stack: Vec<u32>,
    calls: Vec<(u32, usize)>,
    parent: Vec<Option<(u32, Edge)>>,
    queue: VecDeque<u32>,
    /// Edges the searches may still visit (see [`crate::Limits::search_budget`]).
    pub(crate) budget: u64,
    /// Set when a search stopped because the budget ran out.
    pub(crate) exhausted: bool,
}

impl Search {
    pub(crate) fn new(n: usize, budget: u64) -> Search {
        Search {
            index: vec![UNSEEN; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            touched: Vec::new(),
            stack: Vec::new(),
            calls: Vec::new(),
            parent: vec![None; n],
            queue: VecDeque::new(),
            budget,
            exhausted: false,
        }
    }

    /// The cyclic components of the whole graph, ordered by their smallest
    /// node (so that reports follow the history), and each node's component
    /// number (`u32::MAX` for a node on no cycle).
    pub(crate) fn cyclic_components(&mut self, g: &Graph) -> (Vec<Vec<u32>>, Vec<u32>) {
        let all: Vec<u32> = (0..g.nodes() as u32).collect();
        let mut sccs = self.components(g, &all, |_, _| true);
        sccs.sort_unstable_by_key(|nodes| nodes.iter().min().copied());
        let mut comp = vec![u32::MAX; g.nodes()];
        for (c, nodes) in sccs.iter().enumerate() {
            for &v in nodes {
                comp[v as usize] = c as u32;
            }
        }
        (sccs, comp)
    }

    /// Strongly connected components with more than one node, of the
    /// subgraph reachable from `roots` through the edges `keep` accepts.
    /// (Every edge is visited once; this does not draw on the budget.)
    pub(crate) fn components(&mut self, g: &Graph, roots: &[u32], keep: impl Fn(u32, &Edge) -> bool) -> Vec<Vec<u32>> {
        let mut found = Vec::new();
        let mut counter = 0u32;
        for &root in roots {
            if self.index[root as usize] != UNSEEN {
                continue;
            }
            self.visit(root, &mut counter);
            while let Some(&(v, pos)) = self.calls.last() {
                let out = g.out(v);
                if pos < out.len() {
                    self.calls.last_mut().expect("non-empty").1 = pos + 1;
                    let e = out[pos];
                    if !keep(v, &e) {
                        continue;
                    }
                    let w = e.to as usize;
                    if self.index[w] == UNSEEN {
                        self.visit(e.to, &mut counter);
                    } else if self.on_stack[w] {
                        self.low[v as usize] = self.low[v as usize].min(self.index[w]);
                    }
                    continue;
                }
                self.calls.pop();
                if let Some(&(u, _)) = self.calls.last() {
                    self.low[u as usize] = self.low[u as usize].min(self.low[v as usize]);
                }
                if self.low[v as usize] == self.index[v as usize] {
                    let comp = self.pop_component(v);
                    if comp.len() > 1 {
                        found.push(comp);
                    }
                }
            }
        }
        for &v in &self.touched {
            self.index[v as usize] = UNSEEN;
        }
        self.touched.clear();
        found
    }

    fn visit(&mut self, v: u32, counter: &mut u32) {
        let i = v as usize;
        self.index[i] = *counter;
        self.low[i] = *counter;
        *counter += 1;
        self.touched.push(v);
        self.stack.push(v);
        self.on_stack[i] = true;
        self.calls.push((v, 0));
    }

    fn pop_component(&mut self, root: u32) -> Vec<u32> {
        let mut comp = Vec::new();
        while let Some(w) = self.stack.pop() {
            self.on_stack[w as usize] = false;
            comp.push(w);
            if w == root {
                break;
            }
        }
        comp
    }

    /// Breadth-first search from `from` over the edges `keep` accepts, until
    /// an accepted edge satisfies `goal`; returns the path as hops, the last
    /// hop being that edge. `None` if there is none or, when `limited`, the
    /// budget ran out.
    pub(crate) fn path(
        &mut self,
        g: &Graph,
        from: u32,
        keep: impl Fn(u32, &Edge) -> bool,
        goal: impl Fn(&Edge) -> bool,
        limited: bool,
    ) -> Option<Cycle> {
        self.mark(from, None);
        self.queue.push_back(from);
        let mut result = None;
        'bfs: while let Some(v) = self.queue.pop_front() {
            for e in g.out(v) {
                if limited {
                    if self.budget == 0 {
                        self.exhausted = true;
                        break 'bfs;
                    }
                    self.budget -= 1;
                }
                if !keep(v, e) {
                    continue;
                }
                if goal(e) {
                    result = Some(self.unwind(v, *e));
                    break 'bfs;
                }
                if self.index[e.to as usize] == UNSEEN {
                    self.mark(e.to, Some((v, *e)));
                    self.queue.push_back(e.to);
                }
            }
        }
        self.queue.clear();
        for &v in &self.touched {
            self.index[v as usize] = UNSEEN;
            self.parent[v as usize] = None;
        }
        self.touched.clear();
        result
    }

    /// A shortest cycle through `start` over the edges `keep` accepts
    /// (not limited by the budget: one search is linear in the graph).
    pub(crate) fn cycle_through(&mut self, g: &Graph, start: u32, keep: impl Fn(u32, &Edge) -> bool) -> Option<Cycle> {
        self.path(g, start, keep, |e| e.to == start, false)
    }

    fn mark(&mut self, v: u32, parent: Option<(u32, Edge)>) {
        self.index[v as usize] = 0;
        self.parent[v as usize] = parent;
        self.touched.push(v);
    }

    fn unwind(&self, last: u32, edge: Edge) -> Cycle {
        let mut hops = vec![(last, edge)];
        let mut v = last;
        while let Some((p, e)) = self.parent[v as usize] {
            hops.push((p, e));
            v = p;
        }
        hops.reverse();
        hops
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(to: u32, dep: Dep) -> Edge {
        Edge { to, dep, key: 0 }
    }

    #[test]
    fn components_find_cycles_only() {
        // 0 -> 1 -> 2 -> 0, 2 -> 3, 3 -> 4 -> 3, 5 alone
        let raw = vec![
            (0, e(1, Dep::Ww)),
            (1, e(2, Dep::Wr)),
            (2, e(0, Dep::Rw)),
            (2, e(3, Dep::Ww)),
            (3, e(4, Dep::Ww)),
            (4, e(3, Dep::Prw)),
            (4, e(3, Dep::Prw)),
        ];
        let g = Graph::build(6, raw);
        assert_eq!(g.counts(), [3, 1, 1, 1]);
        let mut s = Search::new(6, 1000);
        let all: Vec<u32> = (0..6).collect();
        let mut comps = s.components(&g, &all, |_, _| true);
        for c in &mut comps {
            c.sort();
        }
        comps.sort();
        assert_eq!(comps, vec![vec![0, 1, 2], vec![3, 4]]);
        // Without anti-dependencies nothing is cyclic; state was reset.
        assert!(s.components(&g, &all, |_, e| !e.dep.is_anti()).is_empty());
        let c = s.cycle_through(&g, 1, |_, _| true).unwrap();
        let nodes: Vec<u32> = c.iter().map(|h| h.0).collect();
        assert_eq!(nodes, vec![1, 2, 0]);
        assert!(s.cycle_through(&g, 5, |_, _| true).is_none());
    }

    #[test]
    fn long_chain_does_not_overflow() {
        let n = 1_000_000u32;
        let raw = (0..n).map(|i| (i, e((i + 1) % n, Dep::Ww))).collect();
        let g = Graph::build(n as usize, raw);
        let mut s = Search::new(n as usize, u64::MAX);
        let comps = s.components(&g, &[0], |_, _| true);
        assert_eq!(comps.len(), 1);
        assert_eq!(comps[0].len(), n as usize);
        assert_eq!(s.cycle_through(&g, 0, |_, _| true).unwrap().len(), n as usize);
    }

    #[test]
    fn budget_stops_search() {
        let n = 1000u32;
        let raw = (0..n).map(|i| (i, e((i + 1) % n, Dep::Ww))).collect();
        let g = Graph::build(n as usize, raw);
        let mut s = Search::new(n as usize, 10);
        assert!(s.path(&g, 0, |_, _| true, |e| e.to == 0, true).is_none());
        assert!(s.exhausted);
        assert!(s.cycle_through(&g, 0, |_, _| true).is_some());
    }
}
