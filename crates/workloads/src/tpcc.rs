//! The tpcc workload (not built yet).
