//! RFC 6238 time-based one-time passwords (RFC 4226 HOTP over a time counter).

use hmac::{Hmac, KeyInit, Mac};
use zeroize::Zeroizing;

/// HMAC hash of a TOTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// SHA-1, what authenticator apps use.
    Sha1,
    /// SHA-256.
    Sha256,
    /// SHA-512.
    Sha512,
}

// HMAC of `msg` under `key` with hash `$hash` (HMAC takes keys of any length, so
// `new_from_slice` cannot fail; an empty digest would only make a wrong code).
macro_rules! mac {
    ($hash:ty, $key:expr, $msg:expr) => {
        match <Hmac<$hash> as KeyInit>::new_from_slice($key) {
            Ok(mut mac) => {
                mac.update($msg);
                mac.finalize().into_bytes().to_vec()
            }
            Err(_) => vec![0; 20],
        }
    };
}

/// RFC 4226 HOTP value of `counter`, `digits` long.
pub fn hotp(key: &[u8], counter: u64, digits: u32, algorithm: Algorithm) -> String {
    let msg = counter.to_be_bytes();
    let digest: Zeroizing<Vec<u8>> = Zeroizing::new(match algorithm {
        Algorithm::Sha1 => mac!(sha1::Sha1, key, &msg),
        Algorithm::Sha256 => mac!(sha2::Sha256, key, &msg),
        Algorithm::Sha512 => mac!(sha2::Sha512, key, &msg),
    });
    // Dynamic truncation (RFC 4226 §5.3).
    let offset = usize::from(digest[digest.len() - 1] & 0x0f);
    let binary = (u32::from(digest[offset] & 0x7f) << 24)
        | (u32::from(digest[offset + 1]) << 16)
        | (u32::from(digest[offset + 2]) << 8)
        | u32::from(digest[offset + 3]);
    let modulus = 10u64.pow(digits);
    format!(
        "{:0width$}",
        u64::from(binary) % modulus,
        width = digits as usize
    )
}

/// RFC 6238 TOTP at Unix time `now`: step `step` seconds from T0 = 0.
pub fn totp(key: &[u8], now: u64, step: u64, digits: u32, algorithm: Algorithm) -> String {
    hotp(key, now / step.max(1), digits, algorithm)
}

/// The code an authenticator app shows for a base32 seed now (SHA-1, 30 s, 6 digits).
pub fn code_now(seed_base32: &str) -> Option<String> {
    let key = Zeroizing::new(decode_base32(seed_base32)?);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    Some(totp(&key, now, 30, 6, Algorithm::Sha1))
}

/// Decodes RFC 4648 base32 as authenticator seeds are written: any case, spaces and
/// `=` padding ignored. `None` if a character is not base32.
pub fn decode_base32(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 5 / 8);
    let (mut buffer, mut bits) = (0u64, 0u32);
    for c in text.chars() {
        let value = match c.to_ascii_uppercase() {
            c @ 'A'..='Z' => c as u64 - 'A' as u64,
            c @ '2'..='7' => c as u64 - '2' as u64 + 26,
            ' ' | '-' | '=' => continue,
            _ => return None,
        };
        buffer = (buffer << 5) | value;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    if out.is_empty() { None } else { Some(out) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_6238_appendix_b_vectors() {
        let sha1 = b"12345678901234567890";
        let sha256 = b"12345678901234567890123456789012";
        let sha512 = b"1234567890123456789012345678901234567890123456789012345678901234";
        let table: [(u64, &str, &str, &str); 6] = [
            (59, "94287082", "46119246", "90693936"),
            (1_111_111_109, "07081804", "68084774", "25091201"),
            (1_111_111_111, "14050471", "67062674", "99943326"),
            (1_234_567_890, "89005924", "91819424", "93441116"),
            (2_000_000_000, "69279037", "90698825", "38618901"),
            (20_000_000_000, "65353130", "77737706", "47863826"),
        ];
        for (t, a, b, c) in table {
            assert_eq!(totp(sha1, t, 30, 8, Algorithm::Sha1), a, "SHA-1 at {t}");
            assert_eq!(
                totp(sha256, t, 30, 8, Algorithm::Sha256),
                b,
                "SHA-256 at {t}"
            );
            assert_eq!(
                totp(sha512, t, 30, 8, Algorithm::Sha512),
                c,
                "SHA-512 at {t}"
            );
        }
    }

    #[test]
    fn rfc_4226_appendix_d_hotp_values() {
        let key = b"12345678901234567890";
        let expected = [
            "755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583",
            "399871", "520489",
        ];
        for (counter, code) in expected.iter().enumerate() {
            assert_eq!(hotp(key, counter as u64, 6, Algorithm::Sha1), *code);
        }
    }

    #[test]
    fn base32_seeds_decode_like_authenticators_read_them() {
        // "12345678901234567890" in base32.
        let seed = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
        assert_eq!(decode_base32(seed).unwrap(), b"12345678901234567890");
        assert_eq!(
            decode_base32("gezd gnbv gy3t qojq gezd gnbv gy3t qojq").unwrap(),
            b"12345678901234567890"
        );
        assert_eq!(decode_base32("MZXW6==="), Some(b"foo".to_vec()));
        assert_eq!(decode_base32("not base32!"), None);
        assert_eq!(decode_base32("189"), None);
        assert_eq!(decode_base32(""), None);
        assert_eq!(code_now(seed).unwrap().len(), 6);
    }
}
