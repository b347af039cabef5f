//! The redaction seam: the vault knows the secrets, the browser layer meets the text.
//! A session's redactor is applied to every string a page or Chromium hands Airlock,
//! before anything else reads, matches or cuts it.

use std::borrow::Cow;

/// Hides secret values in text.
pub trait Redact: Send + Sync {
    /// `text` with every form of every secret replaced by a marker. Never fails: a
    /// redactor that cannot run returns a text with nothing of the input in it.
    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str>;

    /// An upper bound, in bytes, on the source text one hidden value can span. A
    /// string cut this far beyond what will be shown of it cannot leave a piece of a
    /// value at the shown end unredacted.
    fn reach(&self) -> usize;

    /// Whether there is anything to hide (callers skip the work when not).
    fn is_active(&self) -> bool;

    /// The byte ranges of `text` that [`redact`](Redact::redact) hides, in order;
    /// `None` when it cannot say which (then treat all of `text` as hidden). What a
    /// painter of images uses to find where on a page a secret is shown.
    fn hidden(&self, text: &str) -> Option<Vec<std::ops::Range<usize>>> {
        match self.redact(text) {
            Cow::Borrowed(_) => Some(Vec::new()),
            Cow::Owned(redacted) if redacted == text => Some(Vec::new()),
            Cow::Owned(_) => None,
        }
    }
}

/// Hides nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRedaction;

impl Redact for NoRedaction {
    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        Cow::Borrowed(text)
    }

    fn reach(&self) -> usize {
        0
    }

    fn is_active(&self) -> bool {
        false
    }
}

/// A redactor that can be replaced while in use: every holder of the slot sees the
/// newest one. A session's redactor grows when it learns a value (an operator types
/// into its page), and everything that already holds it must hide that value too.
pub struct RedactSlot(std::sync::RwLock<std::sync::Arc<dyn Redact>>);

impl RedactSlot {
    /// A slot holding `redactor`.
    pub fn new(redactor: std::sync::Arc<dyn Redact>) -> RedactSlot {
        RedactSlot(std::sync::RwLock::new(redactor))
    }

    /// Replaces the redactor for every later call.
    pub fn set(&self, redactor: std::sync::Arc<dyn Redact>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = redactor;
    }

    fn current(&self) -> std::sync::Arc<dyn Redact> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Redact for RedactSlot {
    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.current().redact(text)
    }

    fn hidden(&self, text: &str) -> Option<Vec<std::ops::Range<usize>>> {
        self.current().hidden(text)
    }

    fn reach(&self) -> usize {
        self.current().reach()
    }

    fn is_active(&self) -> bool {
        self.current().is_active()
    }
}

impl std::fmt::Debug for RedactSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RedactSlot(active: {})", self.is_active())
    }
}
