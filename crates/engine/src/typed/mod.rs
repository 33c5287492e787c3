//! Typed keys and values over the byte API.
//!
//! A [`TableDefinition<K, V>`] names a table whose keys are `K` and values
//! `V`; [`TableDefinition::create`] makes it and returns a [`TypedTable`],
//! a `Copy` handle (a [`TableId`] and two type parameters) whose methods
//! encode keys and values, call the [`Transaction`]'s byte methods and
//! decode what comes back. Nothing else changes: the raw API
//! ([`Transaction::get`] with [`crate::Key`] and `&[u8]`) stays, and
//! [`TypedTable::id`] gives the table to it.
//!
//! ```
//! use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
//!
//! /// Orders by (warehouse, district, number).
//! const ORDERS: TableDefinition<(u32, u32, i64), String> = TableDefinition::new("orders");
//!
//! # fn main() -> multiverse::Result<()> {
//! let db = Database::new(Options::default())?;
//! let orders = ORDERS.create(&db, IndexKind::Ordered)?;
//! db.run(Isolation::Serializable, |t| {
//!     orders.insert(t, (1, 2, 7), "b")?;
//!     orders.insert(t, (1, 2, -5), "a")?;
//!     orders.insert(t, (1, 3, -9), "c")
//! })?;
//!
//! let mut t = db.begin(Isolation::Snapshot)?;
//! assert_eq!(orders.get(&mut t, (1, 2, -5))?, Some("a".to_string()));
//! let mut district = vec![];
//! orders.prefix(&mut t, (1u32, 2u32), |(_, _, n), v| {
//!     district.push((n, v));
//!     true
//! })?;
//! assert_eq!(district, [(-5, "a".to_string()), (7, "b".to_string())]);
//! t.commit()?;
//! # Ok(())
//! # }
//! ```
//!
//! # Key layout
//!
//! Keys ([`TypedKey`]) are encoded so that their bytes sort as the values
//! do, and no encoding is a proper prefix of another of the same type, so
//! a tuple's encoding, the concatenation of its parts', sorts as the tuple:
//! `(1, 2, -5) < (1, 2, 7) < (1, 3, -9)`, and a leading sub-tuple's
//! encoding is a prefix of the whole's ([`TypedTable::prefix`]).
//!
//! | type | bytes |
//! | --- | --- |
//! | `u8` to `u128` | big-endian, fixed width |
//! | `i8` to `i128` | big-endian with the sign bit flipped (negatives first) |
//! | `bool` | one byte, `0x00` or `0x01` |
//! | `String`, `Vec<u8>` | the bytes with each `0x00` written `0x00 0xFF`, then `0x00 0x00` |
//! | `[u8; N]` | the `N` bytes as they are |
//! | `()` | nothing |
//! | tuples of 1 to 6 | the parts one after the other |
//!
//! (`u64` keys are the bytes of [`crate::Key::from_u64`], and tuples of
//! unsigned integers those of [`crate::KeyBuilder`].) An encoding longer
//! than [`crate::KEY_MAX`] is refused with [`Error::KeyTooLarge`].
//!
//! # Value layout
//!
//! Values ([`Value`]) are compact and need not sort: integers and floats
//! little-endian, fixed width; `bool` one byte; `String`, `Vec<u8>` and
//! `[u8; N]` their bytes as they are; tuples their parts one after the
//! other, a part of variable width that is not the last preceded by its
//! length (LEB128). With the `serde` feature, `Serde<T>` stores
//! any `Serialize + DeserializeOwned` type in the postcard format.
//!
//! Bytes that do not decode as the type asked for (damaged data, a table
//! read through [`TypedTable::from_id`] with the wrong types) give
//! [`Error::Decode`], never a panic.
//!
//! # Types are recorded
//!
//! A table created by a [`TableDefinition`] records the names of its key
//! and value types ([`std::any::type_name`]), in memory and, for a
//! durable database, in its data directory with the rest of the table's
//! definition. Opening it with other types ([`TableDefinition::open`],
//! [`crate::Database::open_table`], or a schema given to
//! [`crate::Database::open_with`]) is [`Error::SchemaMismatch`] at once,
//! not a decode error at the first read. A table created through the
//! byte API takes the types of its first typed open. The names are the
//! compiler's: a type renamed or moved to another module, or a compiler
//! that names it otherwise, reads as another type.

mod key;
mod range;
#[cfg(feature = "serde")]
mod serde;
mod value;

pub use key::{encode_key, AsKey, TypedKey};
pub use range::TypedKeyRange;
#[cfg(feature = "serde")]
pub use serde::Serde;
pub use value::{AsValue, Value};

use crate::table::Types;
use crate::{Database, Error, IndexId, IndexKind, Key, Result, TableId, TableSpec, Transaction};
use std::fmt;
use std::marker::PhantomData;
use std::ops::Bound;

/// The decode error for a value of type `T`.
pub(crate) fn decode_error<T: ?Sized>(reason: impl Into<String>) -> Error {
    Error::Decode { ty: std::any::type_name::<T>(), reason: reason.into() }
}

/// A table's name and its key and value types, usable as a constant (like
/// redb's). It holds no database: [`TableDefinition::create`] or
/// [`TableDefinition::open`] give the handle for one.
///
/// ```
/// use multiverse::{Database, IndexKind, Options, TableDefinition};
///
/// const USERS: TableDefinition<String, (u32, bool)> = TableDefinition::new("users");
///
/// let db = Database::new(Options::default()).unwrap();
/// let users = USERS.create(&db, IndexKind::Hash { capacity: 1024 }).unwrap();
/// assert_eq!(USERS.open(&db).unwrap(), users);
/// assert_eq!(USERS.name(), "users");
/// ```
pub struct TableDefinition<K, V> {
    name: &'static str,
    types: PhantomData<fn() -> (K, V)>,
}

impl<K: TypedKey, V: Value> TableDefinition<K, V> {
    /// A definition of the table `name`.
    ///
    /// ```
    /// use multiverse::TableDefinition;
    ///
    /// const T: TableDefinition<u64, Vec<u8>> = TableDefinition::new("t");
    /// assert_eq!(T.name(), "t");
    /// ```
    pub const fn new(name: &'static str) -> Self {
        TableDefinition { name, types: PhantomData }
    }

    /// The table's name.
    ///
    /// ```
    /// use multiverse::TableDefinition;
    ///
    /// assert_eq!(TableDefinition::<u8, u8>::new("small").name(), "small");
    /// ```
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The [`TableSpec`] of this table with its primary index of `kind`
    /// and its key and value types, to add secondary indexes to before
    /// [`TableDefinition::create_with`] (or to give
    /// [`crate::Database::open_table`]).
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Options, TableDefinition};
    ///
    /// const T: TableDefinition<u64, String> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let spec = T.spec(IndexKind::Ordered).secondary("len", IndexKind::Ordered, |_, v| {
    ///     multiverse::Key::from(v.len() as u64)
    /// });
    /// let t = T.create_with(&db, spec).unwrap();
    /// assert!(db.index(t.id(), "len").is_ok());
    /// ```
    pub fn spec(&self, kind: IndexKind) -> TableSpec {
        TableSpec { name: self.name.to_string(), primary: kind, secondary: vec![], types: Some(Types::of::<K, V>()) }
    }

    /// Creates the table with its primary index of `kind` (see
    /// [`crate::Database::create_table`]: [`Error::TableExists`] if a table
    /// of that name exists).
    ///
    /// ```
    /// use multiverse::{Database, Error, IndexKind, Options, TableDefinition};
    ///
    /// const T: TableDefinition<(u32, i8), u64> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// T.create(&db, IndexKind::Ordered).unwrap();
    /// assert!(matches!(T.create(&db, IndexKind::Ordered), Err(Error::TableExists(_))));
    /// ```
    pub fn create(&self, db: &Database, kind: IndexKind) -> Result<TypedTable<K, V>> {
        self.create_with(db, self.spec(kind))
    }

    /// Creates the table from `spec`, which must bear this definition's
    /// name ([`Error::InvalidArgument`] otherwise); made by
    /// [`TableDefinition::spec`], it may have secondary indexes. The table
    /// records this definition's key and value types.
    ///
    /// ```
    /// use multiverse::{Database, Error, Options, TableDefinition, TableSpec};
    ///
    /// const T: TableDefinition<u64, u64> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let other = TableSpec::ordered("u");
    /// assert!(matches!(T.create_with(&db, other), Err(Error::InvalidArgument(_))));
    /// T.create_with(&db, TableSpec::ordered("t")).unwrap();
    /// ```
    pub fn create_with(&self, db: &Database, spec: impl Into<TableSpec>) -> Result<TypedTable<K, V>> {
        let spec: TableSpec = spec.into();
        if spec.name != self.name {
            return Err(Error::InvalidArgument(format!(
                "the spec of table '{}' given for the definition of '{}'",
                spec.name, self.name
            )));
        }
        db.create_table(TableSpec { types: Some(Types::of::<K, V>()), ..spec }).map(TypedTable::from_id)
    }

    /// The handle of the existing table of this name
    /// ([`Error::UnknownTable`] if there is none), if its recorded key and
    /// value types are this definition's ([`Error::SchemaMismatch`]
    /// otherwise; see [Types are recorded](crate::typed#types-are-recorded)).
    /// A table created through the byte API records these types now.
    ///
    /// ```
    /// use multiverse::{Database, Error, IndexKind, Options, TableDefinition};
    ///
    /// const T: TableDefinition<u64, u64> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// assert!(matches!(T.open(&db), Err(Error::UnknownTable(_))));
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// assert_eq!(T.open(&db).unwrap(), t);
    /// // The same table with other value types is refused.
    /// const AS_STRINGS: TableDefinition<u64, String> = TableDefinition::new("t");
    /// let e = AS_STRINGS.open(&db).unwrap_err();
    /// assert_eq!(e.to_string(), "table 't': created with values of type u64, opened with alloc::string::String");
    /// ```
    pub fn open(&self, db: &Database) -> Result<TypedTable<K, V>> {
        let id = db.table(self.name)?;
        db.record_types(id, &Types::of::<K, V>())?;
        Ok(TypedTable::from_id(id))
    }
}

impl<K, V> Clone for TableDefinition<K, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K, V> Copy for TableDefinition<K, V> {}
impl<K, V> fmt::Debug for TableDefinition<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TableDefinition<{}, {}>({:?})", std::any::type_name::<K>(), std::any::type_name::<V>(), self.name)
    }
}

/// A table with keys of type `K` and values of type `V`: a [`TableId`]
/// that encodes and decodes. `Copy`, and as cheap to pass as the id.
/// Every method takes the [`Transaction`] to work in; errors are those of
/// the byte methods it calls, plus [`Error::KeyTooLarge`] for a key whose
/// encoding is too long and [`Error::Decode`] for stored bytes that do not
/// decode.
///
/// ```
/// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
///
/// const NAMES: TableDefinition<u64, String> = TableDefinition::new("names");
/// let db = Database::new(Options::default()).unwrap();
/// let names = NAMES.create(&db, IndexKind::Hash { capacity: 64 }).unwrap();
/// db.run(Isolation::Serializable, |t| names.put(t, 1, "one")).unwrap();
/// let v = db.run(Isolation::Snapshot, |t| names.get(t, 1)).unwrap();
/// assert_eq!(v.as_deref(), Some("one"));
/// ```
pub struct TypedTable<K, V> {
    table: TableId,
    types: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Clone for TypedTable<K, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K, V> Copy for TypedTable<K, V> {}
impl<K, V> PartialEq for TypedTable<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.table == other.table
    }
}
impl<K, V> Eq for TypedTable<K, V> {}
impl<K, V> fmt::Debug for TypedTable<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TypedTable<{}, {}>({:?})", std::any::type_name::<K>(), std::any::type_name::<V>(), self.table)
    }
}

impl<K: TypedKey, V: Value> TypedTable<K, V> {
    /// The typed handle of the table `table`, whose rows must have been
    /// written with these types.
    ///
    /// ```
    /// use multiverse::{Database, Options, TableSpec, TypedTable};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let id = db.create_table(TableSpec::ordered("t")).unwrap();
    /// let t = TypedTable::<u64, u64>::from_id(id);
    /// assert_eq!(t.id(), id);
    /// ```
    pub const fn from_id(table: TableId) -> Self {
        TypedTable { table, types: PhantomData }
    }

    /// The table, for the raw byte API.
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Key, Options, TableDefinition};
    ///
    /// const T: TableDefinition<u64, u32> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// db.run(Isolation::Serializable, |x| t.insert(x, 9, 5)).unwrap();
    /// let raw = db.run(Isolation::Snapshot, |x| x.get(t.id(), &Key::from(9))).unwrap();
    /// assert_eq!(raw, Some(5u32.to_le_bytes().to_vec()));
    /// ```
    pub const fn id(&self) -> TableId {
        self.table
    }

    /// The table's primary index (for [`Transaction::scan`]).
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Options, TableDefinition};
    ///
    /// const T: TableDefinition<u64, u32> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// assert_eq!(t.primary(), db.primary(t.id()));
    /// ```
    pub const fn primary(&self) -> IndexId {
        IndexId { table: self.table.0, index: 0, db: self.table.1 }
    }

    /// The engine [`Key`] of `key` (to declare it in an
    /// [`crate::AccessSet`], or for the raw API).
    ///
    /// ```
    /// use multiverse::{Key, TableDefinition, TypedTable};
    ///
    /// # let db = multiverse::Database::new(multiverse::Options::default()).unwrap();
    /// let t: TypedTable<(u32, String), u8> = TableDefinition::new("t").create(&db, multiverse::IndexKind::Ordered).unwrap();
    /// assert_eq!(t.key((1u32, "a")).unwrap().as_bytes(), [0, 0, 0, 1, b'a', 0, 0]);
    /// assert_eq!(t.key((1u32, "x".repeat(40))).unwrap().len(), 4 + 40 + 2);
    /// assert!(t.key((1u32, "x".repeat(2000))).is_err());
    /// ```
    pub fn key(&self, key: impl AsKey<K>) -> Result<Key> {
        encode_key::<K>(key)
    }

    /// Reads the value of `key`.
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<String, u64> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Hash { capacity: 16 }).unwrap();
    /// db.run(Isolation::Serializable, |x| t.insert(x, "a", 1)).unwrap();
    /// let mut x = db.begin(Isolation::Snapshot).unwrap();
    /// assert_eq!(t.get(&mut x, "a").unwrap(), Some(1));
    /// assert_eq!(t.get(&mut x, "b").unwrap(), None);
    /// ```
    pub fn get(&self, t: &mut Transaction<'_>, key: impl AsKey<K>) -> Result<Option<V>> {
        t.get_with(self.table, &self.key(key)?, V::decode_value)?.transpose()
    }

    /// Passes the stored bytes of `key`'s value to `f` without copying or
    /// decoding them (see [`Transaction::get_with`]).
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<u64, Vec<u8>> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// db.run(Isolation::Serializable, |x| t.insert(x, 1, b"abc")).unwrap();
    /// let n = db.run(Isolation::Snapshot, |x| t.get_with(x, 1, |b| b.len())).unwrap();
    /// assert_eq!(n, Some(3));
    /// ```
    pub fn get_with<R>(
        &self,
        t: &mut Transaction<'_>,
        key: impl AsKey<K>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        t.get_with(self.table, &self.key(key)?, f)
    }

    /// Reads the value of `key` for an update that follows in this
    /// transaction: [`Transaction::get_for_update`], which claims the row
    /// as a write would (the protocol's write lock or write intent), so
    /// that a concurrent writer of it conflicts now rather than at commit.
    ///
    /// ```
    /// use multiverse::{Database, Error, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const STOCK: TableDefinition<u32, u64> = TableDefinition::new("stock");
    /// let db = Database::new(Options::default()).unwrap();
    /// let stock = STOCK.create(&db, IndexKind::Hash { capacity: 64 }).unwrap();
    /// db.run(Isolation::Serializable, |t| stock.insert(t, 7, 10)).unwrap();
    /// let mut a = db.begin(Isolation::Serializable).unwrap();
    /// let n = stock.get_for_update(&mut a, 7).unwrap().unwrap();
    /// // The row is claimed: a second writer is refused at once (mv-occ).
    /// let mut b = db.begin(Isolation::Serializable).unwrap();
    /// assert!(matches!(stock.update(&mut b, 7, 0), Err(Error::Aborted(_))));
    /// stock.update(&mut a, 7, n - 1).unwrap();
    /// a.commit().unwrap();
    /// assert_eq!(db.run(Isolation::Snapshot, |t| stock.get(t, 7)).unwrap(), Some(9));
    /// ```
    pub fn get_for_update(&self, t: &mut Transaction<'_>, key: impl AsKey<K>) -> Result<Option<V>> {
        t.get_for_update_with(self.table, &self.key(key)?, V::decode_value)?.transpose()
    }

    /// [`TypedTable::get_for_update`], passing the stored bytes to `f`
    /// without copying or decoding them (see
    /// [`Transaction::get_for_update_with`]).
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<u64, String> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// db.run(Isolation::Serializable, |x| t.insert(x, 1, "abc")).unwrap();
    /// let n = db
    ///     .run(Isolation::Serializable, |x| {
    ///         let n = t.get_for_update_with(x, 1, |b| b.len())?;
    ///         t.update(x, 1, "abcd")?;
    ///         Ok(n)
    ///     })
    ///     .unwrap();
    /// assert_eq!(n, Some(3));
    /// ```
    pub fn get_for_update_with<R>(
        &self,
        t: &mut Transaction<'_>,
        key: impl AsKey<K>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        t.get_for_update_with(self.table, &self.key(key)?, f)
    }

    /// Inserts a new row ([`Error::DuplicateKey`] if `key` has one).
    ///
    /// ```
    /// use multiverse::{Database, Error, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<(bool, i32), String> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// t.insert(&mut x, (true, -1), "v").unwrap();
    /// assert_eq!(t.insert(&mut x, (true, -1), "w"), Err(Error::DuplicateKey));
    /// x.commit().unwrap();
    /// ```
    pub fn insert(&self, t: &mut Transaction<'_>, key: impl AsKey<K>, value: impl AsValue<V>) -> Result<()> {
        let key = self.key(key)?;
        let mut buf = Vec::new();
        value.encode_value(&mut buf)?;
        t.insert(self.table, key, &buf)
    }

    /// Replaces the value of an existing row ([`Error::KeyNotFound`] if
    /// `key` has none).
    ///
    /// ```
    /// use multiverse::{Database, Error, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<u8, u8> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// assert_eq!(t.update(&mut x, 1, 2), Err(Error::KeyNotFound));
    /// t.insert(&mut x, 1, 1).unwrap();
    /// t.update(&mut x, 1, 2).unwrap();
    /// assert_eq!(t.get(&mut x, 1).unwrap(), Some(2));
    /// x.commit().unwrap();
    /// ```
    pub fn update(&self, t: &mut Transaction<'_>, key: impl AsKey<K>, value: impl AsValue<V>) -> Result<()> {
        let key = self.key(key)?;
        let mut buf = Vec::new();
        value.encode_value(&mut buf)?;
        t.update(self.table, &key, &buf)
    }

    /// Inserts the row, or replaces its value if `key` has one.
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<Vec<u8>, u64> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// t.put(&mut x, b"k", 1).unwrap();
    /// t.put(&mut x, b"k", 2).unwrap();
    /// assert_eq!(t.get(&mut x, b"k").unwrap(), Some(2));
    /// x.commit().unwrap();
    /// ```
    pub fn put(&self, t: &mut Transaction<'_>, key: impl AsKey<K>, value: impl AsValue<V>) -> Result<()> {
        let key = self.key(key)?;
        let mut buf = Vec::new();
        value.encode_value(&mut buf)?;
        t.put(self.table, key, &buf)
    }

    /// Deletes the row of `key` ([`Error::KeyNotFound`] if it has none).
    ///
    /// ```
    /// use multiverse::{Database, Error, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<i64, ()> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// t.insert(&mut x, -3, ()).unwrap();
    /// t.delete(&mut x, -3).unwrap();
    /// assert_eq!(t.delete(&mut x, -3), Err(Error::KeyNotFound));
    /// x.commit().unwrap();
    /// ```
    pub fn delete(&self, t: &mut Transaction<'_>, key: impl AsKey<K>) -> Result<()> {
        t.delete(self.table, &self.key(key)?)
    }

    /// Calls `f(key, value)` for every row whose key lies in `range`, in
    /// key order on an ordered primary index (a hash index is scanned
    /// whole, in no order, filtered by `range`), until `f` returns false.
    /// A thin layer over [`Transaction::scan`]: a row that does not decode
    /// ends the scan with [`Error::Decode`].
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<(u32, u32, i64), u64> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// db.run(Isolation::Serializable, |x| {
    ///     for (i, o) in [7i64, -5, 0, 3].into_iter().enumerate() {
    ///         t.insert(x, (1, 2, o), i as u64)?;
    ///     }
    ///     t.insert(x, (1, 3, -9), 9)
    /// })
    /// .unwrap();
    /// let mut seen = vec![];
    /// db.run(Isolation::Snapshot, |x| {
    ///     seen.clear();
    ///     t.range(x, (1u32, 2u32, -5i64)..(1, 2, 7), |k, _| {
    ///         seen.push(k.2);
    ///         true
    ///     })
    /// })
    /// .unwrap();
    /// assert_eq!(seen, [-5, 0, 3]);
    /// ```
    pub fn range(
        &self,
        t: &mut Transaction<'_>,
        range: impl TypedKeyRange<K>,
        f: impl FnMut(K, V) -> bool,
    ) -> Result<()> {
        let (lo, hi) = range.encode_bounds()?;
        self.scan_keys(t, lo, hi, f)
    }

    /// Calls `f(key, value)` for every row, as [`TypedTable::range`] over
    /// all keys.
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<String, u8> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// db.run(Isolation::Serializable, |x| {
    ///     t.insert(x, "b", 2)?;
    ///     t.insert(x, "a", 1)
    /// })
    /// .unwrap();
    /// let mut all = vec![];
    /// db.run(Isolation::Snapshot, |x| t.all(x, |k, v| { all.push((k, v)); true })).unwrap();
    /// assert_eq!(all, [("a".to_string(), 1), ("b".to_string(), 2)]);
    /// ```
    pub fn all(&self, t: &mut Transaction<'_>, f: impl FnMut(K, V) -> bool) -> Result<()> {
        self.scan_keys(t, Bound::Unbounded, Bound::Unbounded, f)
    }

    /// Calls `f(key, value)` for every row whose key's encoding starts with
    /// `prefix`'s: with tuple keys, a leading sub-tuple of the same part
    /// types (`(warehouse, district)` of `(u32, u32, i64)` keys) gives the
    /// rows under it, in key order on an ordered index. `P` must encode as
    /// the leading parts of `K` do: a prefix of other types finds rows
    /// whose bytes happen to match, or none.
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<(String, u16), ()> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// db.run(Isolation::Serializable, |x| {
    ///     for k in [("ab", 2), ("a", 9), ("a", 1), ("a\0", 0)] {
    ///         t.insert(x, k, ())?;
    ///     }
    ///     Ok(())
    /// })
    /// .unwrap();
    /// let mut seen = vec![];
    /// db.run(Isolation::Snapshot, |x| t.prefix(x, ("a".to_string(),), |k, ()| { seen.push(k.1); true })).unwrap();
    /// assert_eq!(seen, [1, 9]);
    /// ```
    pub fn prefix<P: TypedKey>(&self, t: &mut Transaction<'_>, prefix: P, f: impl FnMut(K, V) -> bool) -> Result<()> {
        let lo = encode_key::<P>(prefix)?;
        let hi = match lo.prefix_end() {
            Some(end) => Bound::Excluded(end),
            None => Bound::Unbounded,
        };
        self.scan_keys(t, Bound::Included(lo), hi, f)
    }

    /// The rows whose keys fall in `range`, as an iterator of decoded
    /// `(key, value)` pairs in key order (ordered tables): the typed form of
    /// [`Transaction::range`]. It is double-ended (`.rev()` walks from the
    /// high end), may stop early (under serializable, only what it walked
    /// is validated or locked), and borrows the transaction while it lives.
    /// A row that does not decode as `K`/`V` is handed on as an error.
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<(u32, i64), String> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// db.run(Isolation::Serializable, |x| {
    ///     for o in [-2i64, 5, 0, 9] {
    ///         t.insert(x, (1, o), format!("order {o}"))?;
    ///     }
    ///     t.insert(x, (2, 0), "other".to_string())
    /// })
    /// .unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// let newest_two: Vec<i64> = t
    ///     .iter(&mut x, (1u32, -2i64)..(2, 0))
    ///     .unwrap()
    ///     .rev()
    ///     .take(2)
    ///     .map(|row| row.map(|((_, o), _)| o))
    ///     .collect::<Result<_, _>>()
    ///     .unwrap();
    /// assert_eq!(newest_two, [9, 5]);
    /// x.commit().unwrap();
    /// ```
    pub fn iter<'t, 'db>(
        &self,
        t: &'t mut Transaction<'db>,
        range: impl TypedKeyRange<K>,
    ) -> Result<TypedRange<'t, 'db, K, V>> {
        let (lo, hi) = range.encode_bounds()?;
        Ok(TypedRange { inner: t.range(self.primary(), (lo, hi))?, _types: PhantomData })
    }

    /// The rows under a key prefix (see [`TypedTable::prefix`]), as an
    /// iterator like [`TypedTable::iter`]'s.
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
    ///
    /// const T: TableDefinition<(String, u16), u8> = TableDefinition::new("t");
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = T.create(&db, IndexKind::Ordered).unwrap();
    /// db.run(Isolation::Serializable, |x| {
    ///     for (k, v) in [(("a", 2), 20), (("a", 1), 10), (("b", 1), 30)] {
    ///         t.insert(x, k, v)?;
    ///     }
    ///     Ok(())
    /// })
    /// .unwrap();
    /// let mut x = db.begin(Isolation::Snapshot).unwrap();
    /// let rows: Vec<_> = t.iter_prefix(&mut x, ("a".to_string(),)).unwrap().collect::<Result<_, _>>().unwrap();
    /// assert_eq!(rows, [(("a".to_string(), 1), 10), (("a".to_string(), 2), 20)]);
    /// x.commit().unwrap();
    /// ```
    pub fn iter_prefix<'t, 'db, P: TypedKey>(
        &self,
        t: &'t mut Transaction<'db>,
        prefix: P,
    ) -> Result<TypedRange<'t, 'db, K, V>> {
        let lo = encode_key::<P>(prefix)?;
        Ok(TypedRange { inner: t.prefix(self.primary(), &lo)?, _types: PhantomData })
    }

    /// Scans the primary index between `lo` and `hi`, decoding each row.
    fn scan_keys(
        &self,
        t: &mut Transaction<'_>,
        lo: Bound<Key>,
        hi: Bound<Key>,
        mut f: impl FnMut(K, V) -> bool,
    ) -> Result<()> {
        let mut failed = None;
        t.scan(self.primary(), (lo, hi), None, |k, v| match (K::decode_key(k.as_bytes()), V::decode_value(v)) {
            (Ok(k), Ok(v)) => f(k, v),
            (Err(e), _) | (_, Err(e)) => {
                failed = Some(e);
                false
            }
        })?;
        failed.map_or(Ok(()), Err)
    }
}

/// The iterator of [`TypedTable::iter`] and [`TypedTable::iter_prefix`]: a
/// [`crate::Range`] whose rows are decoded as `(K, V)`.
///
/// ```
/// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
///
/// const SCORES: TableDefinition<String, u64> = TableDefinition::new("scores");
/// let db = Database::new(Options::default()).unwrap();
/// let t = SCORES.create(&db, IndexKind::Ordered).unwrap();
/// db.run(Isolation::Serializable, |x| {
///     t.insert(x, "ann", 3)?;
///     t.insert(x, "bob", 5)?;
///     t.insert(x, "cy", 1)
/// })
/// .unwrap();
/// let mut x = db.begin(Isolation::Snapshot).unwrap();
/// let mut rows = t.iter(&mut x, "b"..).unwrap();
/// assert_eq!(rows.next().unwrap().unwrap(), ("bob".to_string(), 5));
/// assert_eq!(rows.next_back().unwrap().unwrap(), ("cy".to_string(), 1));
/// assert!(rows.next().is_none());
/// ```
pub struct TypedRange<'t, 'db, K, V> {
    inner: crate::Range<'t, 'db>,
    _types: PhantomData<fn() -> (K, V)>,
}

impl<K: TypedKey, V: Value> TypedRange<'_, '_, K, V> {
    fn decode(row: Result<(Key, Vec<u8>)>) -> Result<(K, V)> {
        let (k, v) = row?;
        Ok((K::decode_key(k.as_bytes())?, V::decode_value(&v)?))
    }
}

impl<K: TypedKey, V: Value> Iterator for TypedRange<'_, '_, K, V> {
    type Item = Result<(K, V)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(Self::decode)
    }
}

impl<K: TypedKey, V: Value> DoubleEndedIterator for TypedRange<'_, '_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(Self::decode)
    }
}
