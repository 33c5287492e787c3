//! Values of any serde type, in the postcard format (feature `serde`).

use super::{decode_error, AsValue, Value};
use crate::{Error, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A value stored with serde in the [postcard](https://docs.rs/postcard)
/// format: compact (varint integers, no field names), and stable (postcard
/// 1.x keeps its wire format). A table of `Serde<T>` values takes
/// `Serde(x)` or `&Serde(x)` and gives back `Serde<T>` (`.0` is the value).
///
/// As with any serde format without field names, changing `T` (adding,
/// removing or reordering fields) changes what the stored bytes mean;
/// bytes that no longer decode give [`Error::Decode`].
///
/// ```
/// use multiverse::typed::Serde;
/// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Debug, PartialEq)]
/// struct Customer {
///     name: String,
///     balance: i64,
///     tags: Vec<String>,
/// }
///
/// const CUSTOMERS: TableDefinition<(u32, u32), Serde<Customer>> = TableDefinition::new("customers");
///
/// let db = Database::new(Options::default()).unwrap();
/// let customers = CUSTOMERS.create(&db, IndexKind::Ordered).unwrap();
/// let c = Customer { name: "Ann".into(), balance: -20, tags: vec!["new".into()] };
/// db.run(Isolation::Serializable, |t| customers.insert(t, (1, 7), &Serde(&c))).unwrap();
/// let back = db.run(Isolation::Snapshot, |t| customers.get(t, (1, 7))).unwrap();
/// assert_eq!(back.unwrap().0, c);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Serde<T>(pub T);

impl<T> Serde<T> {
    /// The value.
    ///
    /// ```
    /// use multiverse::typed::Serde;
    ///
    /// assert_eq!(Serde(5).into_inner(), 5);
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

/// A `Serde` of anything that borrows as `T` (`Serde(x)`, and `Serde(&x)`
/// for writing without a clone) encodes as the `Serde` of the `T`.
impl<T: Serialize, R: std::borrow::Borrow<T>> AsValue<Serde<T>> for Serde<R> {
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
        encode(self.0.borrow(), out)
    }
}

impl<T: Serialize + DeserializeOwned> Value for Serde<T> {
    fn decode_value(bytes: &[u8]) -> Result<Self> {
        match postcard::take_from_bytes::<T>(bytes) {
            Ok((v, [])) => Ok(Serde(v)),
            Ok((_, rest)) => Err(decode_error::<T>(format!("{} bytes left over", rest.len()))),
            Err(e) => Err(decode_error::<T>(e.to_string())),
        }
    }
}

/// Appends the postcard encoding of `v` to `out`.
fn encode<T: Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) -> Result<()> {
    let buf = std::mem::take(out);
    *out = postcard::to_extend(v, buf).map_err(|e| {
        Error::InvalidArgument(format!("cannot encode a {} with postcard: {e}", std::any::type_name::<T>()))
    })?;
    Ok(())
}
