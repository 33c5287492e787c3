//! Version records and their words: the memory every protocol stores rows
//! in (tables and their indexes are built on it in [`crate::table`]).

pub mod version;
pub mod word;
