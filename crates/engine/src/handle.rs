//! Table and index handles: small `Copy` values tied to their database.
//!
//! A [`TableId`] names a table, an [`IndexId`] one of its indexes; both
//! carry their database's tag, so that a handle given to another database
//! is refused ([`crate::Error::ForeignHandle`]) with one comparison rather
//! than taken for another table. A table whose primary index is a hash
//! index ([`crate::TableSpec::hash`]) gets a [`HashTableId`]: every point
//! operation and [`crate::Transaction::scan`] take it, but
//! [`crate::Transaction::range`] and [`crate::Transaction::prefix`] do not
//! compile with it (a hash index keeps no key order), through the
//! [`OrderedIndex`] bound.

/// A table handle: the table's number and its database's tag (a number
/// drawn once per [`crate::Database`] in the process), so that a handle of
/// one database given to another is refused with
/// [`crate::Error::ForeignHandle`] (one comparison), never taken for
/// another table.
///
/// A `TableId` is also where ranges start: it converts into the table's
/// primary index (`impl From<TableId> for IndexId`), so
/// [`crate::Transaction::range`] and [`crate::Transaction::scan`] take it
/// directly; secondary indexes are named with [`crate::Database::index`].
///
/// ```
/// use multiverse::{Database, Error, Isolation, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let a = db.create_table(TableSpec::ordered("a")).unwrap();
/// let b = db.create_table(TableSpec::ordered("b")).unwrap();
/// assert_ne!(a, b);
/// assert_eq!(db.table("b").unwrap(), b);
/// // Table "a" of another database is not table "a" of this one.
/// let other = Database::new(Options::default()).unwrap();
/// let a2 = other.create_table(TableSpec::ordered("a")).unwrap();
/// assert_ne!(a, a2);
/// let mut t = db.begin(Isolation::Serializable).unwrap();
/// assert!(matches!(t.get(a2, 1), Err(Error::ForeignHandle(_))));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableId(pub(crate) u32, pub(crate) DbTag);

/// The tag of a database's handles (see [`TableId`]); 0 is no database's
/// (the handles of [`TableId::from_raw`]).
pub(crate) type DbTag = u32;

/// A tag no database of this process has had: drawn from a counter, 0
/// skipped.
pub(crate) fn next_db_tag() -> DbTag {
    static NEXT: crate::sync::atomic::AtomicU32 = crate::sync::atomic::AtomicU32::new(1);
    loop {
        // Relaxed: the counter only hands out distinct numbers; nothing
        // else is published through it.
        let t = NEXT.fetch_add(1, crate::sync::atomic::Ordering::Relaxed);
        if t != 0 {
            return t;
        }
    }
}

impl TableId {
    /// The table's number in its database (tables are numbered from 0 in
    /// the order they were created).
    ///
    /// ```
    /// use multiverse::{Database, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// assert_eq!(t.raw(), 0);
    /// ```
    pub fn raw(self) -> u32 {
        self.0
    }

    /// The handle of table number `n` of no database, for stores other
    /// than a [`crate::Database`] that host the same schema (the adapters
    /// of `multiverse-peers`). A database refuses it: its own handles come
    /// from [`crate::Database::create_table`] and [`crate::Database::table`].
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Options, TableId, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// assert_eq!(TableId::from_raw(0).raw(), t.raw());
    /// assert_ne!(TableId::from_raw(0), t);
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// assert!(matches!(x.get(TableId::from_raw(0), 1), Err(Error::ForeignHandle(_))));
    /// ```
    pub fn from_raw(n: u32) -> TableId {
        TableId(n, 0)
    }
}

/// An index handle: a table and one of its indexes (0 is the primary index).
///
/// ```
/// use multiverse::{Database, IndexKind, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let spec = TableSpec::hash("t", 64).secondary("by_value", IndexKind::Ordered, |_, v| Key::from_bytes(v).unwrap());
/// let t = db.create_table(spec).unwrap();
/// let by_value = db.index(t, "by_value").unwrap();
/// assert_eq!(by_value.table(), t);
/// assert_ne!(by_value, db.primary(t));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IndexId {
    pub(crate) table: u32,
    pub(crate) index: u8,
    /// The database's tag, as in [`TableId`].
    pub(crate) db: DbTag,
}

/// A table's primary index: where [`crate::Transaction::range`],
/// [`crate::Transaction::prefix`] and [`crate::Transaction::scan`] go when
/// given a [`TableId`].
///
/// ```
/// use multiverse::{Database, IndexId, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::ordered("t")).unwrap();
/// assert_eq!(IndexId::from(t), db.primary(t));
/// ```
impl From<TableId> for IndexId {
    #[inline]
    fn from(t: TableId) -> IndexId {
        IndexId { table: t.0, index: 0, db: t.1 }
    }
}

impl IndexId {
    /// The table this index belongs to.
    ///
    /// ```
    /// use multiverse::{Database, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// assert_eq!(db.primary(t).table(), t);
    /// ```
    pub fn table(self) -> TableId {
        TableId(self.table, self.db)
    }

    /// The index's number in its table: 0 for the primary index, then the
    /// secondary indexes in the order they were declared.
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t").secondary("s", IndexKind::Ordered, |pk, _| pk.clone())).unwrap();
    /// assert_eq!(db.primary(t).index_no(), 0);
    /// assert_eq!(db.index(t, "s").unwrap().index_no(), 1);
    /// ```
    pub fn index_no(self) -> u8 {
        self.index
    }

    /// The handle of index number `index` of `table` (see
    /// [`TableId::from_raw`]).
    ///
    /// ```
    /// use multiverse::{Database, IndexId, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// assert_eq!(IndexId::from_raw(t, 0), db.primary(t));
    /// ```
    #[doc(hidden)]
    pub fn from_raw(table: TableId, index: u8) -> IndexId {
        IndexId { table: table.0, index, db: table.1 }
    }
}

/// The handle of a table whose primary index is a hash index (what
/// [`crate::Database::create_table`] returns for a
/// [`crate::TableSpec::hash`]): a [`TableId`] that every point operation
/// and [`crate::Transaction::scan`] take, but that
/// [`crate::Transaction::range`] and [`crate::Transaction::prefix`] refuse
/// by type, since a hash index keeps no key order. It converts into a
/// plain [`TableId`] (`t.into()` or [`HashTableId::table`]) where code
/// keeps handles of both kinds; a range over such a `TableId` is then
/// refused when it runs ([`crate::Error::Unsupported`]).
///
/// ```
/// use multiverse::{Database, Isolation, Options, TableId, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let sessions = db.create_table(TableSpec::hash("sessions", 1024)).unwrap();
/// db.run(Isolation::Serializable, |x| x.put(sessions, "alice", "token")).unwrap();
/// let mut x = db.begin(Isolation::Serializable).unwrap();
/// assert_eq!(x.get(sessions, "alice").unwrap().as_deref(), Some(&b"token"[..]));
/// let mut n = 0;
/// x.scan(sessions, .., None, |_, _| { n += 1; true }).unwrap();
/// assert_eq!(n, 1);
/// assert_eq!(db.table("sessions").unwrap(), TableId::from(sessions));
/// ```
///
/// ```compile_fail
/// use multiverse::{Database, Isolation, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let sessions = db.create_table(TableSpec::hash("sessions", 1024)).unwrap();
/// let mut x = db.begin(Isolation::Serializable).unwrap();
/// // A hash table has no key order: this does not compile.
/// let _ = x.range(sessions, ..);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HashTableId(pub(crate) TableId);

impl HashTableId {
    /// The same table as a plain [`TableId`].
    ///
    /// ```
    /// use multiverse::{Database, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// assert_eq!(t.table(), db.table("t").unwrap());
    /// ```
    #[inline]
    pub fn table(self) -> TableId {
        self.0
    }

    /// The table's number in its database (see [`TableId::raw`]).
    ///
    /// ```
    /// use multiverse::{Database, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// assert_eq!(t.raw(), 0);
    /// ```
    pub fn raw(self) -> u32 {
        self.0 .0
    }
}

/// A hash table's handle as a plain [`TableId`].
///
/// ```
/// use multiverse::{Database, Options, TableId, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// let any: TableId = t.into();
/// assert_eq!(any, t);
/// ```
impl From<HashTableId> for TableId {
    #[inline]
    fn from(t: HashTableId) -> TableId {
        t.0
    }
}

/// A hash table's primary index, for [`crate::Transaction::scan`] (a walk
/// in no particular order).
///
/// ```
/// use multiverse::{Database, IndexId, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// assert_eq!(IndexId::from(t), db.primary(t));
/// ```
impl From<HashTableId> for IndexId {
    #[inline]
    fn from(t: HashTableId) -> IndexId {
        IndexId::from(t.0)
    }
}

/// A hash table's handle equals the plain handle of the same table.
///
/// ```
/// use multiverse::{Database, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// assert!(t == db.table("t").unwrap());
/// ```
impl PartialEq<TableId> for HashTableId {
    fn eq(&self, other: &TableId) -> bool {
        self.0 == *other
    }
}

/// A plain handle equals the hash table handle of the same table.
///
/// ```
/// use multiverse::{Database, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// assert!(db.table("t").unwrap() == t);
/// ```
impl PartialEq<HashTableId> for TableId {
    fn eq(&self, other: &HashTableId) -> bool {
        *self == other.0
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::TableId {}
    impl Sealed for super::IndexId {}
}

/// What [`crate::Transaction::range`] and [`crate::Transaction::prefix`]
/// walk: an index that keeps its keys in order. A [`TableId`] (the
/// table's primary index) or an [`IndexId`]; not a [`HashTableId`], whose
/// hash index has no key order. A `TableId` or `IndexId` whose index turns
/// out to be a hash index when the walk starts (a handle looked up by name
/// carries no kind) is refused then, with [`crate::Error::Unsupported`].
///
/// ```
/// use multiverse::{Database, Error, IndexKind, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let spec = TableSpec::hash("t", 64).secondary("by_value", IndexKind::Ordered, |_, v| Key::from_bytes(v).unwrap());
/// let t = db.create_table(spec).unwrap();
/// db.run(Isolation::Serializable, |x| x.put(t, 1, "b").and_then(|_| x.put(t, 2, "a"))).unwrap();
/// let mut x = db.begin(Isolation::Serializable).unwrap();
/// // The ordered secondary index walks in value order.
/// let by_value = db.index(t, "by_value").unwrap();
/// let first = x.range(by_value, ..).unwrap().next().unwrap().unwrap();
/// assert_eq!(first.0, Key::from(2));
/// // The primary index, looked up by name, is refused when the walk starts.
/// let named = db.table("t").unwrap();
/// assert!(matches!(x.range(named, ..), Err(Error::Unsupported(_))));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an ordered index: range and prefix need key order",
    label = "a hash table keeps no key order",
    note = "walk a hash table in no particular order with Transaction::scan, or declare the table \
            ordered (TableSpec::ordered) or give it an ordered secondary index (IndexKind::Ordered)"
)]
pub trait OrderedIndex: Into<IndexId> + sealed::Sealed {}

impl OrderedIndex for TableId {}
impl OrderedIndex for IndexId {}
