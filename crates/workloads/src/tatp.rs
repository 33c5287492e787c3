//! The tatp workload (not built yet).
