//! Tests of recover's pieces that need no data directory.

use super::load::table_not_created;
use super::*;

#[test]
fn the_table_a_schema_lacks_is_read_from_the_engine_error() {
    let e = multiverse::Error::InvalidArgument("the data names table 'a.b's', which the schema does not create".into());
    assert_eq!(table_not_created(&e).as_deref(), Some("a.b's"));
    assert_eq!(table_not_created(&multiverse::Error::InvalidArgument("other".into())), None);
    assert_eq!(table_not_created(&multiverse::Error::Corrupt("the data names table 'x'".into())), None);
}

#[test]
fn panics_become_messages() {
    let r = catching_panics(|| -> u32 { panic!("boom\nsecond line") });
    let e = r.unwrap_err();
    assert!(e.starts_with("boom at ") && e.contains("recover/tests.rs"), "{e}");
    assert_eq!(catching_panics(|| 7), Ok(7));
}
