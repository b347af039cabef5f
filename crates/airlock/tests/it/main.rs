//! Repository rules checked as ordinary tests (rust-analyzer's tidy idea).

mod tidy;
