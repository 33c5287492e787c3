//! The smallbank workload (not built yet).
