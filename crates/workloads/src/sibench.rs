//! The sibench workload (not built yet).
