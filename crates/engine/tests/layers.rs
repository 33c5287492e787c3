//! The engine's structure, checked from its source (docs/ARCHITECTURE.md,
//! "Layers"): the import graph of `crates/engine/src` between the layers
//! and the protocol families, built from every `crate::`, `super::` and
//! root re-exported name a source file mentions outside comments.
//!
//! * no layer below the protocols (storage, index, table, txn, gc,
//!   history, the leaves) names a protocol;
//! * no protocol family names another (what two share lives below both:
//!   `protocol/core.rs`, `protocol/sets.rs`);
//! * the protocols (`cc::*`) name neither the database (`db`) nor
//!   durability: they are handed what they need at begin;
//! * the graph has no cycle.
//!
//! `cargo test -p multiverse-engine --test layers -- --nocapture` prints
//! the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers below the protocols: they may name none.
const BELOW_CC: &[&str] = &[
    "error",
    "key",
    "options",
    "stats",
    "sync",
    "storage",
    "index",
    "table",
    "txn",
    "gc",
    "history",
    "wal",
    "shared",
    "memory",
    "obs",
    "breakdown",
];

/// The protocol families: none may name another.
const FAMILIES: &[&str] = &["cc::mv", "cc::silo", "cc::lock", "cc::bohm"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("the source directory is readable") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A file's module path: `protocol/silo/commit.rs` is `protocol::silo::commit`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs").to_string();
    if stem != "mod" && stem != "lib" {
        parts.push(stem);
    }
    parts
}

/// The node of the graph a module path belongs to.
fn node(path: &[String]) -> Option<String> {
    let first = path.first()?.as_str();
    if first != "protocol" {
        return Some(first.to_string());
    }
    Some(
        match path.get(1).map(String::as_str) {
            None | Some("transaction" | "family" | "iter" | "savepoint") => "cc::facade",
            Some("core" | "sets" | "single" | "deadlock") => "cc::core",
            Some("mv") => "cc::mv",
            Some("silo") => "cc::silo",
            Some("lock_1v" | "ordered_2pl") => "cc::lock",
            Some("bohm") => "cc::bohm",
            Some(other) => panic!("protocol::{other} belongs to no family: add it to `node`"),
        }
        .to_string(),
    )
}

/// The source without comments (line comments, doc comments, and block
/// comments), and without string literals' contents.
fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            i += 3; // a char literal such as '{'
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn ident_at(s: &str, at: usize) -> Option<&str> {
    let rest = &s[at..];
    let n = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
    (n > 0).then(|| &rest[..n])
}

/// The names a group `{a, b::c, d::{e, f}}` starting at `at` (just after
/// the brace) imports first: `a`, `b`, `d`.
fn group_heads(s: &str, at: usize) -> Vec<&str> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut expect = true;
    let bytes = s.as_bytes();
    let mut i = at;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' if depth == 0 => break,
            b'}' => depth -= 1,
            b',' if depth == 0 => expect = true,
            c if expect && (c.is_ascii_alphabetic() || c == b'_') => {
                let id = ident_at(s, i).expect("an identifier");
                heads.push(id);
                i += id.len();
                expect = false;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    heads
}

/// Root names (`crate::Database`) and the module each is re-exported from.
fn reexports(lib: &str) -> BTreeMap<String, Vec<String>> {
    let lib = code(lib);
    let mut map = BTreeMap::new();
    for stmt in lib.split(';') {
        let stmt = stmt.trim();
        let Some(path) = stmt.strip_prefix("pub use ") else { continue };
        let (prefix, names): (&str, Vec<&str>) = match path.find('{') {
            Some(b) => (&path[..b], group_heads(path, b + 1)),
            None => {
                let (p, last) = path.rsplit_once("::").expect("a path");
                (p, vec![last])
            }
        };
        let module: Vec<String> =
            prefix.trim_end_matches("::").split("::").filter(|p| !p.is_empty()).map(str::to_string).collect();
        for n in names {
            map.insert(n.trim().to_string(), module.clone());
        }
    }
    map
}

/// The module paths a file's code names.
fn references(code: &str, me: &[String], roots: &BTreeMap<String, Vec<String>>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let resolve = |head: &str, rest_start: usize, base: Vec<String>, out: &mut Vec<Vec<String>>| {
        let mut p = base;
        p.push(head.to_string());
        // One more segment, for `crate::protocol::silo`.
        if code[rest_start..].starts_with("::") {
            if let Some(next) = ident_at(code, rest_start + 2) {
                p.push(next.to_string());
            }
        }
        out.push(p);
    };
    for (at, _) in code.match_indices("crate::") {
        if at > 0 && code.as_bytes()[at - 1] == b'$' {
            continue;
        }
        let i = at + "crate::".len();
        if code[i..].starts_with('{') {
            for h in group_heads(code, i + 1) {
                match roots.get(h) {
                    Some(m) => out.push(m.clone()),
                    None if h != "self" => out.push(vec![h.to_string()]),
                    None => {}
                }
            }
        } else if code[i..].starts_with('*') {
            out.extend(roots.values().cloned());
        } else if let Some(h) = ident_at(code, i) {
            match roots.get(h) {
                Some(m) => out.push(m.clone()),
                None => resolve(h, i + h.len(), Vec::new(), &mut out),
            }
        }
    }
    // `super::` (possibly repeated) from the file's own module.
    let mut at = 0;
    while let Some(k) = code[at..].find("super::") {
        let start = at + k;
        at = start + 1;
        if start > 0 && code.as_bytes()[start - 1] == b':' {
            continue; // the second `super::` of a chain, counted below
        }
        let mut base: Vec<String> = me.to_vec();
        let mut i = start;
        while code[i..].starts_with("super::") {
            base.pop();
            i += "super::".len();
        }
        if code[i..].starts_with('{') {
            for h in group_heads(code, i + 1) {
                let mut p = base.clone();
                p.push(h.to_string());
                out.push(p);
            }
        } else if let Some(h) = ident_at(code, i) {
            resolve(h, i + h.len(), base, &mut out);
        }
    }
    // Bare paths through modules brought in by `use crate::*` or
    // `use crate::{protocol, ...}`: only names no module nests.
    for m in ["protocol", "durability", "storage"] {
        let pat = format!("{m}::");
        for (at, _) in code.match_indices(&pat) {
            let prev = code[..at].chars().next_back();
            if prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            resolve(m, at + m.len(), Vec::new(), &mut out);
        }
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = src();
    let roots = reexports(&std::fs::read_to_string(root.join("lib.rs")).expect("lib.rs"));
    let mut all = Vec::new();
    files(&root, &mut all);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in all {
        let rel = f.strip_prefix(&root).expect("under src").to_path_buf();
        let name = rel.to_string_lossy();
        if name == "lib.rs" || name.contains("_tests") {
            continue; // declarations and re-exports only; unit tests
        }
        let me = module_of(&rel);
        let Some(from) = node(&me) else { continue };
        let text = std::fs::read_to_string(&f).expect("a readable source file");
        // Unit-test modules at the end of a file are not part of the graph.
        let text = match text.find("#[cfg(test)]\nmod tests") {
            Some(k) => &text[..k],
            None => &text[..],
        };
        let edges = g.entry(from.clone()).or_default();
        for r in references(&code(text), &me, &roots) {
            if let Some(to) = node(&r) {
                if to != from {
                    edges.insert(to);
                }
            }
        }
    }
    g
}

/// Tarjan's strongly connected components of more than one node.
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        let g = t.g;
        for w in g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut c = Vec::new();
            loop {
                let w = t.stack.pop().expect("on the stack");
                t.on.remove(w);
                c.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if c.len() > 1 {
                c.sort();
                t.out.push(c);
            }
        }
    }
    let mut t =
        T { g, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on: BTreeSet::new(), out: Vec::new() };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out.sort();
    t.out
}

fn print(g: &BTreeMap<String, BTreeSet<String>>) {
    for (from, to) in g {
        println!("{from} -> {}", to.iter().cloned().collect::<Vec<_>>().join(", "));
    }
}

#[test]
fn no_layer_below_the_protocols_names_one() {
    let g = graph();
    print(&g);
    let mut bad = Vec::new();
    for low in BELOW_CC {
        for to in g.get(*low).into_iter().flatten() {
            if to.starts_with("cc::") || to == "db" || to == "durability" {
                bad.push(format!("{low} -> {to}"));
            }
        }
    }
    assert!(bad.is_empty(), "layers below the protocols name what is above them: {bad:?}");
}

#[test]
fn no_family_names_another() {
    let g = graph();
    let mut bad = Vec::new();
    for f in FAMILIES {
        for to in g.get(*f).into_iter().flatten() {
            if FAMILIES.contains(&to.as_str()) {
                bad.push(format!("{f} -> {to}"));
            }
        }
    }
    assert!(bad.is_empty(), "a protocol family names another: {bad:?}");
}

#[test]
fn the_protocols_name_neither_the_database_nor_durability() {
    let g = graph();
    let mut bad = Vec::new();
    for (from, to) in &g {
        if from.starts_with("cc::") {
            bad.extend(to.iter().filter(|t| *t == "db" || *t == "durability").map(|t| format!("{from} -> {t}")));
        }
    }
    assert!(bad.is_empty(), "a protocol module names the database or durability: {bad:?}");
}

#[test]
fn the_graph_has_no_cycle() {
    let g = graph();
    let found = cycles(&g);
    assert!(found.is_empty(), "the module graph has cycles: {found:?}");
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    // So that `the_graph_has_no_cycle` can fail: a graph with one cycle of
    // three and a node beside it.
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.to_string()).or_default().insert(b.to_string());
    }
    assert_eq!(cycles(&g), vec![vec!["a".to_string(), "b".to_string(), "c".to_string()]]);
}

#[test]
fn the_graph_sees_known_edges() {
    // The extraction itself, checked on edges that certainly exist, so that
    // a parser that finds nothing cannot pass the tests above.
    let g = graph();
    for (from, to) in [
        ("cc::mv", "txn"),
        ("txn", "storage"),
        ("table", "index"),
        ("cc::facade", "cc::silo"),
        ("shared", "gc"),
        ("durability", "db"),
    ] {
        assert!(g.get(from).is_some_and(|e| e.contains(to)), "{from} -> {to} not found");
    }
}
