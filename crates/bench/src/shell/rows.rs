//! The row encoding of table `test(id integer key, value integer)` and the
//! printed form of a set of rows.
//!
//! Ids become 8-byte keys that sort like the integers (the sign bit flipped,
//! big-endian, through [`Key::from_u64`]); values are 8 little-endian bytes.

use multiverse::Key;
use std::collections::BTreeMap;

/// Rows by id, in id order.
pub(crate) type Rows = BTreeMap<i64, i64>;

const SIGN: u64 = 1 << 63;

/// The key of an id.
pub(crate) fn key(id: i64) -> Key {
    Key::from_u64((id as u64) ^ SIGN)
}

/// The id of a key written by [`key`].
pub(crate) fn id(key: &Key) -> Result<i64, String> {
    match key.to_u64() {
        Some(u) if key.len() == 8 => Ok((u ^ SIGN) as i64),
        _ => Err(format!("key of {} bytes is not an id", key.len())),
    }
}

/// The stored form of a value.
pub(crate) fn value_bytes(v: i64) -> [u8; 8] {
    v.to_le_bytes()
}

/// The value of a stored row.
pub(crate) fn value(bytes: &[u8]) -> Result<i64, String> {
    <[u8; 8]>::try_from(bytes)
        .map(i64::from_le_bytes)
        .map_err(|_| format!("value of {} bytes is not an integer", bytes.len()))
}

/// `{1:10, 2:20}` (`{}` when empty).
pub(crate) fn format(rows: &Rows) -> String {
    let items: Vec<String> = rows.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    format!("{{{}}}", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_like_ids() {
        let ids = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for w in ids.windows(2) {
            assert!(key(w[0]) < key(w[1]), "{} < {}", w[0], w[1]);
        }
        for i in ids {
            assert_eq!(id(&key(i)), Ok(i));
            assert_eq!(value(&value_bytes(i)), Ok(i));
        }
        assert!(value(&[1, 2]).is_err());
    }

    #[test]
    fn formats_rows() {
        assert_eq!(format(&Rows::new()), "{}");
        assert_eq!(format(&Rows::from([(2, 20), (-1, 10)])), "{-1:10, 2:20}");
    }
}
