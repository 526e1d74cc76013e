//! The jobs' integration tests, in one binary (one link instead of one per
//! file): each module tests one job against a naive reference or its
//! stated behaviour.

mod dedup;
mod exact;
mod exact_only;
mod fuzz;
mod pairs;
mod span;
mod spotsigs;
