//! Zipfian key generator (not built yet).
