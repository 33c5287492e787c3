//! Table declarations: [`TableSpec`] (a name, a primary index, secondary
//! indexes, a typed table's type names) and [`HashTableSpec`], the same for
//! a table keyed by a hash index, whose handle refuses ranges by type.

use crate::key::Key;
use crate::{Error, HashTableId, TableId};

/// The key and value type names of a typed table, as
/// [`std::any::type_name`] gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Types {
    pub(crate) key: String,
    pub(crate) value: String,
}

impl Types {
    /// The type names of `K` and `V`.
    pub(crate) fn of<K, V>() -> Types {
        Types { key: std::any::type_name::<K>().to_string(), value: std::any::type_name::<V>().to_string() }
    }

    /// How `opened` differs from these types, which the table was
    /// `was` with ("stored", "created"), if it does.
    pub(crate) fn differs(&self, opened: &Types, was: &str) -> Option<String> {
        if self.key != opened.key {
            return Some(format!("{was} with keys of type {}, opened with {}", self.key, opened.key));
        }
        if self.value != opened.value {
            return Some(format!("{was} with values of type {}, opened with {}", self.value, opened.value));
        }
        None
    }
}

/// Derives a secondary-index key from a row's primary key and value. A plain
/// function pointer: called on writes and on secondary lookups only.
///
/// ```
/// use multiverse::{Database, IndexKind, Isolation, Key, KeyFn, Options, TableSpec};
///
/// // Index rows by the first byte of their value.
/// let first_byte: KeyFn = |_pk, v| Key::from(v[0] as u64);
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64).secondary("first", IndexKind::Ordered, first_byte)).unwrap();
/// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"xyz")).unwrap();
/// let mut x = db.begin(Isolation::Serializable).unwrap();
/// let mut found = vec![];
/// x.get_by(db.index(t, "first").unwrap(), &Key::from(b'x' as u64), |pk, _| {
///     found.push(pk.clone());
///     true
/// })
/// .unwrap();
/// assert_eq!(found, [Key::from(1)]);
/// ```
pub type KeyFn = fn(pk: &Key, value: &[u8]) -> Key;

/// The kind of an index.
///
/// ```
/// use multiverse::{Database, IndexKind, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let spec = TableSpec::ordered("orders")
///     .secondary("by_value", IndexKind::Hash { capacity: 1024 }, |_, v| Key::from_bytes(v).unwrap())
///     .secondary("by_len", IndexKind::Ordered, |_, v| Key::from(v.len() as u64))
///     .secondary("grouped", IndexKind::OrderedGrouped { prefix: 4 }, |pk, _| pk.clone());
/// db.create_table(spec).unwrap();
/// let bad = TableSpec::hash("bad", 64).secondary("g", IndexKind::OrderedGrouped { prefix: 0 }, |pk, _| pk.clone());
/// assert!(db.create_table(bad).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    /// Lock-free hash index starting with at least `capacity` buckets
    /// (equality lookups; full scans visit every bucket, in no particular
    /// order). It doubles its buckets online, without stopping readers,
    /// when it holds more versions than buckets (see
    /// `index::hash`); its locks (MV/L's bucket locks, 1V's key
    /// locks) keep the granularity of the initial buckets. Small ones (a
    /// capacity up to 256) get eight buckets per key, a cache line each:
    /// their rows are few and hot.
    Hash {
        /// Expected number of distinct keys (at least 1).
        capacity: usize,
    },
    /// Concurrent ordered index (equality lookups and range scans).
    Ordered,
    /// An ordered index whose entries are grouped by the first `prefix`
    /// bytes of their keys (1 to [`crate::KEY_MAX`]): lookups, inserts and
    /// scans within one prefix reach their group through a hash table and
    /// search only its entries; scans across prefixes still deliver keys in
    /// order. For keys led by a part with many values (a customer, a
    /// district and last name) under which few entries sit. Grouping
    /// applies to the skip list ([`crate::OrderedMap::SkipList`]); over the
    /// B+tree the index is one tree, whose inner nodes find a prefix's
    /// entries as well.
    OrderedGrouped {
        /// Bytes of the key that pick its group.
        prefix: usize,
    },
}

/// The kind as the schema errors name it: `hash(64)` (with its
/// capacity), `ordered`, `ordered-grouped(4)` (with its prefix).
///
/// ```
/// use multiverse::IndexKind;
///
/// assert_eq!(IndexKind::Hash { capacity: 64 }.to_string(), "hash(64)");
/// assert_eq!(IndexKind::Ordered.to_string(), "ordered");
/// assert_eq!(IndexKind::OrderedGrouped { prefix: 4 }.to_string(), "ordered-grouped(4)");
/// ```
impl std::fmt::Display for IndexKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexKind::Hash { capacity } => write!(f, "hash({capacity})"),
            IndexKind::Ordered => write!(f, "ordered"),
            IndexKind::OrderedGrouped { prefix } => write!(f, "ordered-grouped({prefix})"),
        }
    }
}

impl IndexKind {
    pub(crate) fn check(self) -> Result<(), Error> {
        match self {
            IndexKind::Hash { capacity: 0 } => {
                Err(Error::InvalidArgument("a hash index needs a capacity of at least 1 (it grows from there)".into()))
            }
            IndexKind::OrderedGrouped { prefix } if prefix == 0 || prefix > crate::key::KEY_MAX => {
                Err(Error::InvalidArgument(format!(
                    "a grouped ordered index needs a prefix of 1 to {} bytes, not {prefix}",
                    crate::key::KEY_MAX
                )))
            }
            _ => Ok(()),
        }
    }
}

/// Declares a table: its name, primary index, and secondary indexes.
///
/// ```
/// use multiverse::{Database, IndexKind, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// // Customers by id, with an index on the name (the value).
/// let spec = TableSpec::hash("customers", 1 << 16)
///     .secondary("by_name", IndexKind::Ordered, |_, v| Key::from_bytes(v).unwrap());
/// let t = db.create_table(spec).unwrap();
/// assert!(db.index(t, "by_name").is_ok());
/// ```
#[derive(Clone, Debug)]
pub struct TableSpec {
    pub(crate) name: String,
    pub(crate) primary: IndexKind,
    pub(crate) secondary: Vec<(String, IndexKind, KeyFn)>,
    /// A typed table's key and value types (set by the typed layer,
    /// [`crate::TableDefinition::spec`]).
    pub(crate) types: Option<Types>,
}

impl TableSpec {
    /// A table whose primary index is of `kind`, chosen at run time (a
    /// tool that recreates recorded tables): its handle is a plain
    /// [`TableId`] whatever the kind, so a range over a hash primary index
    /// is refused when it runs ([`Error::Unsupported`]) rather than by
    /// type as with [`TableSpec::hash`].
    ///
    /// ```
    /// use multiverse::{Database, Error, IndexKind, Isolation, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::new("t", IndexKind::Hash { capacity: 64 })).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// assert!(matches!(x.range(t, ..), Err(Error::Unsupported(_))));
    /// ```
    pub fn new(name: &str, kind: IndexKind) -> TableSpec {
        TableSpec { name: name.to_string(), primary: kind, secondary: vec![], types: None }
    }

    /// A table whose primary key lives in a hash index of at least
    /// `capacity` buckets at first (it grows with the table; a capacity of 0
    /// is refused by [`crate::Database::create_table`]). Its declaration is
    /// a [`HashTableSpec`], and its handle a [`HashTableId`]: point
    /// operations and [`crate::Transaction::scan`] take it, ranges and
    /// prefixes do not compile with it (a hash index keeps no key order).
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("sessions", 1024)).unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, 1, "s")).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// assert_eq!(x.get(t, 1).unwrap().as_deref(), Some(&b"s"[..]));
    /// ```
    pub fn hash(name: &str, capacity: usize) -> HashTableSpec {
        HashTableSpec(TableSpec {
            name: name.to_string(),
            primary: IndexKind::Hash { capacity },
            secondary: vec![],
            types: None,
        })
    }
    /// A table whose primary key lives in an ordered index.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("log")).unwrap();
    /// db.run(Isolation::Serializable, |x| (1..=3u64).try_for_each(|k| x.insert(t, Key::from(k), b""))).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// let last = x.range(db.primary(t), ..).unwrap().next_back().unwrap().unwrap();
    /// assert_eq!(last.0, Key::from(3));
    /// ```
    pub fn ordered(name: &str) -> TableSpec {
        TableSpec { name: name.to_string(), primary: IndexKind::Ordered, secondary: vec![], types: None }
    }
    /// A table whose primary key lives in an ordered index grouped by the
    /// first `prefix` bytes of the key (see [`IndexKind::OrderedGrouped`]).
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// // Orders grouped by customer (the first 4 bytes of the key).
    /// let orders = db.create_table(TableSpec::ordered_grouped("orders", 4)).unwrap();
    /// let key = |c: u32, o: u32| Key::builder().u32(c).u32(o).build().unwrap();
    /// db.run(Isolation::Serializable, |x| {
    ///     for (c, o) in [(1, 1), (2, 1), (1, 2)] {
    ///         x.insert(orders, key(c, o), b"")?;
    ///     }
    ///     Ok(())
    /// })
    /// .unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// let customer = Key::builder().u32(1).build().unwrap();
    /// assert_eq!(x.prefix(db.primary(orders), &customer).unwrap().count(), 2);
    /// ```
    pub fn ordered_grouped(name: &str, prefix: usize) -> TableSpec {
        TableSpec {
            name: name.to_string(),
            primary: IndexKind::OrderedGrouped { prefix },
            secondary: vec![],
            types: None,
        }
    }
    /// Adds a non-unique secondary index; `key` derives its key from a row.
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// // Non-unique: many rows may share a secondary key.
    /// let spec = TableSpec::hash("t", 64).secondary("parity", IndexKind::Ordered, |pk, _| Key::from(pk.to_u64().unwrap() % 2));
    /// let t = db.create_table(spec).unwrap();
    /// db.run(Isolation::Serializable, |x| (0..10u64).try_for_each(|k| x.insert(t, Key::from(k), b""))).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// assert_eq!(x.range(db.index(t, "parity").unwrap(), Key::from(1)..=Key::from(1)).unwrap().count(), 5);
    /// ```
    pub fn secondary(mut self, name: &str, kind: IndexKind, key: KeyFn) -> TableSpec {
        self.secondary.push((name.to_string(), kind, key));
        self
    }

    /// Declares the key and value types of a typed table, by name
    /// ([`std::any::type_name`]): the table records them, and opening it
    /// with other types is [`Error::SchemaMismatch`] (see
    /// [`crate::typed`]). [`crate::TableDefinition::spec`] sets them; a
    /// tool that recreates a table as a data directory records it
    /// ([`crate::durability::tables`]) sets the recorded ones.
    ///
    /// ```
    /// use multiverse::{Database, Error, IndexKind, Options, TableDefinition, TableSpec};
    ///
    /// const T: TableDefinition<u64, String> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// db.create_table(TableSpec::ordered("t").types("u64", "alloc::string::String")).unwrap();
    /// assert!(T.open(&db).is_ok());
    /// assert!(matches!(TableDefinition::<u64, u64>::new("t").open(&db), Err(Error::SchemaMismatch { .. })));
    /// ```
    pub fn types(mut self, key: &str, value: &str) -> TableSpec {
        self.types = Some(Types { key: key.to_string(), value: value.to_string() });
        self
    }

    /// The table's name.
    ///
    /// ```
    /// use multiverse::TableSpec;
    ///
    /// assert_eq!(TableSpec::ordered("log").name(), "log");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kind of the primary index.
    ///
    /// ```
    /// use multiverse::{IndexKind, TableSpec};
    ///
    /// assert_eq!(TableSpec::ordered("log").primary_kind(), IndexKind::Ordered);
    /// ```
    pub fn primary_kind(&self) -> IndexKind {
        self.primary
    }

    /// The secondary indexes, in the order they were added (index `i` of
    /// this list is the table's index number `i + 1`): name, kind, key
    /// function. For code that hosts the same schema elsewhere (the
    /// adapters of `multiverse-peers`).
    ///
    /// ```
    /// use multiverse::{IndexKind, Key, TableSpec};
    ///
    /// let spec = TableSpec::hash("t", 64).secondary("len", IndexKind::Ordered, |_, v| Key::from(v.len() as u64));
    /// let (name, kind, f) = spec.secondaries().next().unwrap();
    /// assert_eq!((name, kind), ("len", IndexKind::Ordered));
    /// assert_eq!(f(&Key::from(1), b"abc"), Key::from(3));
    /// ```
    pub fn secondaries(&self) -> impl Iterator<Item = (&str, IndexKind, KeyFn)> + '_ {
        self.secondary.iter().map(|(n, k, f)| (n.as_str(), *k, *f))
    }
}

/// The declaration of a table keyed by a hash index
/// ([`TableSpec::hash`]): a [`TableSpec`] whose table's handle is a
/// [`HashTableId`], so that a range over its primary index is refused by
/// type. It reads like a `TableSpec` (it dereferences to one) and converts
/// into one (`spec.into()`) where code keeps declarations of both kinds;
/// such a table's handle is then a plain [`TableId`].
///
/// ```
/// use multiverse::{Database, IndexKind, Key, Options, TableId, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let spec = TableSpec::hash("users", 1024).secondary("by_name", IndexKind::Ordered, |_, v| Key::from_bytes(v).unwrap());
/// assert_eq!(spec.name(), "users");
/// assert_eq!(spec.primary_kind(), IndexKind::Hash { capacity: 1024 });
/// let specs: Vec<TableSpec> = vec![spec.into(), TableSpec::ordered("log")];
/// let ids: Vec<TableId> = specs.into_iter().map(|s| db.create_table(s).unwrap()).collect();
/// assert_eq!(ids[0], db.table("users").unwrap());
/// ```
#[derive(Clone, Debug)]
pub struct HashTableSpec(TableSpec);

impl HashTableSpec {
    /// Adds a non-unique secondary index (see [`TableSpec::secondary`]).
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let spec = TableSpec::hash("t", 64).secondary("len", IndexKind::Ordered, |_, v| Key::from(v.len() as u64));
    /// let t = db.create_table(spec).unwrap();
    /// db.run(Isolation::Serializable, |x| x.put(t, 1, "abc")).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// assert_eq!(x.range(db.index(t, "len").unwrap(), 3u64..=3).unwrap().count(), 1);
    /// ```
    pub fn secondary(self, name: &str, kind: IndexKind, key: KeyFn) -> HashTableSpec {
        HashTableSpec(self.0.secondary(name, kind, key))
    }

    /// Declares the key and value types of a typed table (see
    /// [`TableSpec::types`]).
    ///
    /// ```
    /// use multiverse::TableSpec;
    ///
    /// let spec = TableSpec::hash("t", 64).types("u64", "u64");
    /// assert_eq!(spec.name(), "t");
    /// ```
    pub fn types(self, key: &str, value: &str) -> HashTableSpec {
        HashTableSpec(self.0.types(key, value))
    }
}

/// A hash table's declaration reads as a [`TableSpec`].
///
/// ```
/// use multiverse::{IndexKind, TableSpec};
///
/// let spec = TableSpec::hash("t", 64);
/// assert_eq!((spec.name(), spec.secondaries().count()), ("t", 0));
/// ```
impl std::ops::Deref for HashTableSpec {
    type Target = TableSpec;
    fn deref(&self) -> &TableSpec {
        &self.0
    }
}

/// A hash table's declaration as a plain [`TableSpec`], whose table's
/// handle is a plain [`TableId`].
///
/// ```
/// use multiverse::{IndexKind, TableSpec};
///
/// let spec: TableSpec = TableSpec::hash("t", 64).into();
/// assert_eq!(spec.primary_kind(), IndexKind::Hash { capacity: 64 });
/// ```
impl From<HashTableSpec> for TableSpec {
    fn from(s: HashTableSpec) -> TableSpec {
        s.0
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::TableSpec {}
    impl Sealed for super::HashTableSpec {}
}

/// A table declaration and the kind of handle its table gets:
/// [`TableSpec`] gives a [`TableId`], [`HashTableSpec`] a [`HashTableId`]
/// (see [`crate::Database::create_table`]).
///
/// ```
/// use multiverse::{Database, HashTableId, Options, TableId, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let log: TableId = db.create_table(TableSpec::ordered("log")).unwrap();
/// let users: HashTableId = db.create_table(TableSpec::hash("users", 64)).unwrap();
/// assert_ne!(log, users.table());
/// ```
pub trait TableKind: sealed::Sealed {
    /// The handle of a table declared so.
    type Handle: Copy + Into<TableId>;
    /// The declaration itself.
    #[doc(hidden)]
    fn into_spec(self) -> TableSpec;
    /// The handle of the table just created or opened.
    #[doc(hidden)]
    fn handle(id: TableId) -> Self::Handle;
}

impl TableKind for TableSpec {
    type Handle = TableId;
    #[inline]
    fn into_spec(self) -> TableSpec {
        self
    }
    #[inline]
    fn handle(id: TableId) -> TableId {
        id
    }
}

impl TableKind for HashTableSpec {
    type Handle = HashTableId;
    #[inline]
    fn into_spec(self) -> TableSpec {
        self.0
    }
    #[inline]
    fn handle(id: TableId) -> HashTableId {
        HashTableId(id)
    }
}
