//! Nothing but tests: `tests/metrics.rs` and `tests/tracing.rs` check the
//! engine's optional `metrics` and `tracing` features with a
//! recording metrics recorder and a recording `tracing` subscriber, both
//! written here so that no exporter or subscriber crate is needed. This
//! crate exists so that `cargo test --workspace` builds the engine with
//! both features on and runs them.
