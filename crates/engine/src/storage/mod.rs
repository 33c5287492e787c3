//! Storage for the multi-version family (Hekaton MV/O now; MV/L, SSN, SSI and
//! POMVCC later): version records and tables.

pub mod table;
pub mod version;
pub mod word;
