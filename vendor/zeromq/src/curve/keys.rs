//! Long-term CurveZMQ keys, and their Z85 text form (RFC 32), as libzmq's `zmq_curve_keypair`,
//! `zmq_curve_public`, `zmq_z85_encode` and `zmq_z85_decode` give them.

use crate::codec::CodecError;
use crate::error::{ZmqError, ZmqResult};

use crypto_box::aead::OsRng;
use crypto_box::{PublicKey, SecretKey};

/// The length of a CurveZMQ key, public or secret.
pub const CURVE_KEY_SIZE: usize = 32;

/// The length of a key written in Z85 (RFC 32): 40 characters for 32 bytes.
pub const CURVE_KEY_Z85_SIZE: usize = 40;

/// A Curve25519 key pair: a socket's long-term identity under CurveZMQ. The secret is wiped
/// from memory when the pair is dropped.
#[derive(Clone)]
pub struct CurveKeyPair {
    pub(crate) secret: SecretKey,
    pub(crate) public: PublicKey,
}

impl CurveKeyPair {
    /// A new random key pair, from the operating system's random source.
    pub fn generate() -> Self {
        Self::from_secret(SecretKey::generate(&mut OsRng).to_bytes())
    }

    /// The key pair whose secret key is `secret` (the public key is derived from it).
    pub fn from_secret(secret: [u8; CURVE_KEY_SIZE]) -> Self {
        let secret = SecretKey::from_bytes(secret);
        let public = secret.public_key();
        Self { secret, public }
    }

    /// The key pair whose secret key is the Z85 text `secret`, as a Jupyter connection file's
    /// `curve_secretkey` or libzmq's `ZMQ_CURVE_SECRETKEY` holds it.
    pub fn from_z85(secret: &str) -> ZmqResult<Self> {
        Ok(Self::from_secret(z85_decode_key(secret)?))
    }

    /// The public key.
    pub fn public_key(&self) -> [u8; CURVE_KEY_SIZE] {
        self.public.to_bytes()
    }

    /// The secret key (to write it where a client of a key pair it made must find it, as a
    /// Jupyter connection file holds the kernel's).
    pub fn secret_key(&self) -> [u8; CURVE_KEY_SIZE] {
        self.secret.to_bytes()
    }

    /// The public key in Z85 text.
    pub fn public_z85(&self) -> String {
        z85::encode(self.public.as_bytes())
    }
}

impl std::fmt::Debug for CurveKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("CurveKeyPair")
            .field("public", &self.public_z85())
            .finish_non_exhaustive()
    }
}

/// Decodes a 40-character Z85 key into its 32 bytes.
pub fn z85_decode_key(text: &str) -> ZmqResult<[u8; CURVE_KEY_SIZE]> {
    const WRONG: ZmqError = ZmqError::Codec(CodecError::Mechanism(
        "a CURVE key must be 40 characters of Z85 text (RFC 32)",
    ));
    if text.len() != CURVE_KEY_Z85_SIZE {
        return Err(WRONG);
    }
    let bytes = z85::decode(text).map_err(|_| WRONG)?;
    bytes.try_into().map_err(|_| WRONG)
}

/// Writes a 32-byte key as 40 characters of Z85 text.
pub fn z85_encode_key(key: &[u8; CURVE_KEY_SIZE]) -> String {
    z85::encode(key)
}
