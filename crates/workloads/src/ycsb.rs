//! The ycsb workload (not built yet).
