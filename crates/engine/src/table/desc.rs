//! A table's descriptor: what a data directory records of a table's
//! definition, so that an open can compare it with the schema that opens
//! the directory, and create the tables a schema does not (see
//! `durability::schema`).
//!
//! A descriptor is a [`TableSpec`] without its key functions (code, which
//! cannot be stored): the primary index's kind (a hash index's bucket
//! count included), the secondary indexes' names and kinds in order, and
//! for a typed table ([`crate::TableDefinition`]) its key and value type
//! names. Its bytes are `DESC` in `wal::format`.

use super::{IndexKind, TableSpec, Types};
use crate::Error;

/// What a data directory records of a table (module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TableDesc {
    pub(crate) primary: IndexKind,
    /// Name and kind of each secondary index, in order.
    pub(crate) secondary: Vec<(String, IndexKind)>,
    /// A typed table's key and value types; `None` for a table of the
    /// byte API.
    pub(crate) types: Option<Types>,
}

impl TableDesc {
    /// The descriptor of the table `spec` declares.
    pub(crate) fn of(spec: &TableSpec) -> TableDesc {
        TableDesc {
            primary: spec.primary,
            secondary: spec.secondary.iter().map(|(n, k, _)| (n.clone(), *k)).collect(),
            types: spec.types.clone(),
        }
    }

    /// How `opened`, a table's definition as a schema gives it, differs
    /// from this one, which the table was `was` with ("stored" in a data
    /// directory, "created" in memory): the first difference, in a few
    /// words ("stored as ordered, opened as hash(64)"), or `None`. Secondary
    /// indexes are compared by name and kind, not order (rows are stored
    /// by primary key; the indexes are built from them). Types are
    /// compared when both sides have them: a table of the byte API may be
    /// opened typed, and a typed one through the byte API.
    pub(crate) fn differs(&self, opened: &TableDesc, was: &str) -> Option<String> {
        if self.primary != opened.primary {
            return Some(format!("{was} as {}, opened as {}", self.primary, opened.primary));
        }
        for (name, kind) in &self.secondary {
            match opened.secondary.iter().find(|(n, _)| n == name) {
                None => return Some(format!("{was} with secondary index '{name}' ({kind}), opened without it")),
                Some((_, k)) if k != kind => {
                    return Some(format!("secondary index '{name}' {was} as {kind}, opened as {k}"));
                }
                Some(_) => {}
            }
        }
        for (name, kind) in &opened.secondary {
            if !self.secondary.iter().any(|(n, _)| n == name) {
                return Some(format!("opened with secondary index '{name}' ({kind}), {was} without it"));
            }
        }
        match (&self.types, &opened.types) {
            (Some(s), Some(o)) => s.differs(o, was),
            _ => None,
        }
    }

    /// The spec that creates the table `name` as described: refused for a
    /// table with secondary indexes, whose key functions only a schema
    /// can give ([`Error::KeyFunctionNeeded`], naming the first).
    pub(crate) fn spec(&self, name: &str) -> Result<TableSpec, Error> {
        if let Some((index, _)) = self.secondary.first() {
            return Err(Error::KeyFunctionNeeded { table: name.to_string(), index: index.clone() });
        }
        Ok(TableSpec { name: name.to_string(), primary: self.primary, secondary: vec![], types: self.types.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Key;

    fn desc(spec: impl Into<TableSpec>) -> TableDesc {
        let spec = spec.into();
        TableDesc::of(&spec)
    }

    /// Every kind of difference is named; equal definitions have none.
    #[test]
    fn differences_are_named() {
        let f = |_: &Key, _: &[u8]| Key::from(0);
        let base = || TableSpec::ordered("t").secondary("a", IndexKind::Ordered, f);
        assert_eq!(desc(base()).differs(&desc(base()), "stored"), None);
        let cases = [
            (
                TableSpec::hash("t", 64).secondary("a", IndexKind::Ordered, f).into(),
                "stored as ordered, opened as hash(64)",
            ),
            (TableSpec::ordered("t"), "stored with secondary index 'a' (ordered), opened without it"),
            (
                TableSpec::ordered("t").secondary("a", IndexKind::Hash { capacity: 8 }, f),
                "secondary index 'a' stored as ordered, opened as hash(8)",
            ),
            (
                base().secondary("b", IndexKind::OrderedGrouped { prefix: 4 }, f),
                "opened with secondary index 'b' (ordered-grouped(4)), stored without it",
            ),
        ];
        for (opened, want) in cases {
            assert_eq!(desc(base()).differs(&desc(opened), "stored").as_deref(), Some(want));
        }
        // The order of the secondary indexes is not data: rows are stored
        // by their primary keys only, and the indexes built from them.
        let two = |x: &str, y: &str| {
            TableSpec::ordered("t").secondary(x, IndexKind::Ordered, f).secondary(y, IndexKind::Ordered, f)
        };
        assert_eq!(desc(two("a", "b")).differs(&desc(two("b", "a")), "stored"), None);
        // Types: compared when both sides have them.
        let typed = |v: &str| TableDesc { types: Some(Types { key: "u64".into(), value: v.into() }), ..desc(base()) };
        assert_eq!(typed("u64").differs(&typed("u64"), "stored"), None);
        assert_eq!(typed("u64").differs(&desc(base()), "stored"), None);
        assert_eq!(desc(base()).differs(&typed("u64"), "stored"), None);
        assert_eq!(
            typed("u64").differs(&typed("alloc::string::String"), "stored").as_deref(),
            Some("stored with values of type u64, opened with alloc::string::String")
        );
    }

    #[test]
    fn only_tables_without_secondary_indexes_are_recreated() {
        let spec = desc(TableSpec::hash("t", 16)).spec("t").unwrap();
        assert_eq!(desc(spec), desc(TableSpec::hash("t", 16)));
        let e = desc(TableSpec::ordered("t").secondary("by_x", IndexKind::Ordered, |k, _| k.clone())).spec("t");
        assert_eq!(
            e.unwrap_err().to_string(),
            "table 't' has secondary index 'by_x': its key function must be given by the schema"
        );
    }
}
