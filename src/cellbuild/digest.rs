//! Stable keys for what the build cache keeps on disk (the prelude's stamp, the cargo front
//! end's records, the link plan's library names): SHA-256 over length-prefixed fields, so the
//! same inputs give the same key in every process and after every toolchain update (std's
//! `DefaultHasher` promises no algorithm across releases, and its `Hash` impls no byte layout).

use sha2::{Digest as _, Sha256};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{SystemTime, UNIX_EPOCH};

/// A key being built: feed it fields in a fixed order, then take its hex digits.
#[derive(Default)]
pub(crate) struct Key(Sha256);

impl Key {
    pub(crate) fn new() -> Key {
        Key::default()
    }

    /// One field of bytes; its length goes first, so `("ab", "c")` and `("a", "bc")` differ.
    pub(crate) fn bytes(&mut self, bytes: &[u8]) -> &mut Key {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    pub(crate) fn os(&mut self, text: &OsStr) -> &mut Key {
        self.bytes(text.as_bytes())
    }

    pub(crate) fn number(&mut self, n: u64) -> &mut Key {
        self.0.update(n.to_le_bytes());
        self
    }

    /// A field that may be missing (an unreadable file): missing and empty differ.
    pub(crate) fn optional(&mut self, bytes: Option<&[u8]>) -> &mut Key {
        match bytes {
            Some(bytes) => self.number(1).bytes(bytes),
            None => self.number(0),
        }
    }

    /// A modification time, to the nanosecond (missing, or before 1970, is 0).
    pub(crate) fn time(&mut self, time: Option<SystemTime>) -> &mut Key {
        let nanos = time
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        self.number(nanos)
    }

    /// The first `digits` hex digits of the digest (at most 64).
    pub(crate) fn hex(&self, digits: usize) -> String {
        let digest = self.0.clone().finalize();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        hex[..digits.min(hex.len())].to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sha256_of_length_prefixed_fields() {
        let mut key = Key::new();
        key.bytes(b"ab").bytes(b"c");
        let mut other = Key::new();
        other.bytes(b"a").bytes(b"bc");
        assert_ne!(key.hex(32), other.hex(32));
        // Pinned: a key written by one build of the kernel is found by every later one.
        let mut empty = Key::new();
        empty.bytes(b"");
        assert_eq!(empty.hex(16), "af5570f5a1810b7a");
        assert_eq!(Key::new().optional(None).hex(64).len(), 64);
    }
}
