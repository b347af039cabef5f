//! Every log line of a test process, captured: a test that promises a value never
//! reaches a log reads what was logged.

use std::sync::{Arc, Mutex, PoisonError};

#[derive(Clone)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures every log line of this test process at TRACE level, from now on.
pub fn capture_logs() -> Arc<Mutex<Vec<u8>>> {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let sink = Sink(buffer.clone());
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || sink.clone())
        .finish();
    // nextest runs each test in its own process, so this is this test's subscriber.
    let _ = tracing::subscriber::set_global_default(subscriber);
    buffer
}
