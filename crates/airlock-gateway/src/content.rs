//! Page content is untrusted input to the model: it is fenced with markers that carry
//! the page's origin and a per-session random nonce, so a client can tell the page's
//! words from Airlock's own, and a page cannot forge the closing marker without
//! knowing the nonce.

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

    /// `text` from the page at `url`, fenced.
    pub fn wrap(&self, url: &str, text: &str) -> String {
        let origin = origin_of(url);
        let body = text.trim_end_matches('\n');
        format!(
            "<page-content origin=\"{origin}\" nonce=\"{}\">\n{body}\n</page-content nonce=\"{}\">",
            self.nonce, self.nonce
        )
    }
}

impl Default for PageFence {
    fn default() -> Self {
        PageFence::new()
    }
}

// `scheme://host[:port]`, or the URL's scheme for pages without an origin.
fn origin_of(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.split(':').next().unwrap_or_default().to_owned() + ":";
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    // Never echo userinfo.
    let host = authority.rsplit('@').next().unwrap_or(authority);
    format!("{scheme}://{host}").replace('"', "%22")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_carry_origin_and_nonce() {
        let fence = PageFence::new();
        assert_eq!(fence.nonce().len(), 16);
        assert_ne!(fence.nonce(), PageFence::new().nonce());
        let out = fence.wrap("http://user:pw@127.0.0.1:9/a?b", "- button \"Go\"\n");
        let n = fence.nonce();
        assert_eq!(
            out,
            format!(
                "<page-content origin=\"http://127.0.0.1:9\" nonce=\"{n}\">\n- button \"Go\"\n</page-content nonce=\"{n}\">"
            )
        );
        assert!(fence.wrap("about:blank", "x").contains("origin=\"about:\""));
    }
}
