//! Page content is untrusted input to the model: it is fenced with markers that carry
//! a per-session random nonce, so a client can tell the page's words from Airlock's
//! own, and a page cannot forge the closing marker without knowing the nonce. The
//! page's URL is on Airlock's `page:` line right above the fence, not repeated in it.

/// The fence of one agent session.
#[derive(Debug, Clone)]
pub struct PageFence {
    nonce: String,
}

impl PageFence {
    /// A fence with a fresh random nonce.
    pub fn new() -> PageFence {
        let mut bytes = [0u8; 8];
        // Without OS randomness the fence still works, it is only guessable.
        let _ = getrandom::fill(&mut bytes);
        PageFence {
            nonce: bytes.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    /// The nonce (tool descriptions tell agents to look for it).
    pub fn nonce(&self) -> &str {
        &self.nonce
    }

    /// `text` from the page, fenced.
    pub fn wrap(&self, text: &str) -> String {
        let body = text.trim_end_matches('\n');
        format!(
            "<page-content nonce=\"{}\">\n{body}\n</page-content nonce=\"{}\">",
            self.nonce, self.nonce
        )
    }
}

impl Default for PageFence {
    fn default() -> Self {
        PageFence::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_carry_the_nonce() {
        let fence = PageFence::new();
        assert_eq!(fence.nonce().len(), 16);
        assert_ne!(fence.nonce(), PageFence::new().nonce());
        let out = fence.wrap("- button \"Go\"\n");
        let n = fence.nonce();
        assert_eq!(
            out,
            format!("<page-content nonce=\"{n}\">\n- button \"Go\"\n</page-content nonce=\"{n}\">")
        );
    }
}
