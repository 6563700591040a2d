//! CurveZMQ (RFC 26): authenticated, encrypted connections, as libzmq's `ZMQ_CURVE_SERVER`,
//! `ZMQ_CURVE_SECRETKEY` and `ZMQ_CURVE_SERVERKEY` give them.
//!
//! A socket made with [`SocketOptions::curve_server`](crate::SocketOptions::curve_server)
//! accepts only clients that know its public key; every byte after the handshake is boxed
//! (Curve25519, XSalsa20-Poly1305) with keys made for that connection alone. The
//! cryptography is RustCrypto's `crypto_box` and `crypto_secretbox`; this module only lays out
//! RFC 26's commands.

mod cipher;
mod handshake;
mod keys;

pub(crate) use cipher::{Opener, Sealer, MESSAGE_OVERHEAD};
pub use keys::{z85_decode_key, z85_encode_key, CurveKeyPair, CURVE_KEY_SIZE, CURVE_KEY_Z85_SIZE};

use crate::codec::{FramedIo, ZmqMechanism};
use crate::error::ZmqResult;

use bytes::Bytes;
use crypto_box::PublicKey;
use parking_lot::Mutex;

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The security mechanism of a socket's connections.
#[derive(Clone, Debug, Default)]
pub(crate) enum Mechanism {
    /// RFC 23's NULL: no authentication, no encryption.
    #[default]
    Null,
    /// A CURVE server with its long-term key pair.
    CurveServer(CurveKeyPair),
    /// A CURVE client: the server's public key and the client's own key pair.
    CurveClient {
        server: [u8; CURVE_KEY_SIZE],
        keys: CurveKeyPair,
    },
}

impl Mechanism {
    pub(crate) fn greeting(&self) -> (ZmqMechanism, bool) {
        match self {
            Mechanism::Null => (ZmqMechanism::NULL, false),
            Mechanism::CurveServer(_) => (ZmqMechanism::CURVE, true),
            Mechanism::CurveClient { .. } => (ZmqMechanism::CURVE, false),
        }
    }

    /// Runs the CURVE handshake on `io` (after the greeting) and installs the session's
    /// codecs; returns the peer's metadata. `None` for NULL, whose READY is exchanged as before.
    pub(crate) async fn handshake(
        &self,
        io: &mut FramedIo,
        metadata: &HashMap<String, Bytes>,
    ) -> Option<ZmqResult<HashMap<String, Bytes>>> {
        if let Mechanism::Null = self {
            return None;
        }
        io.read_half.read_mechanism_commands();
        let session = match self {
            Mechanism::Null => return None,
            Mechanism::CurveServer(keys) => handshake::server(io, keys, metadata).await,
            Mechanism::CurveClient { server, keys } => {
                handshake::client(io, &PublicKey::from(*server), keys, metadata).await
            }
        };
        Some(
            session
                .map(|session| session.install(io))
                .inspect_err(|error| {
                    if matches!(self, Mechanism::CurveServer(_)) {
                        warn_refused(format_args!("refused a CURVE handshake: {error}"));
                    }
                }),
        )
    }
}

/// One warning per refused peer (a failed handshake, another mechanism), but at most one a
/// second: a flood of bad handshakes costs the log a line a second. The count of those not
/// written comes with the next line written.
pub(crate) fn warn_refused(what: std::fmt::Arguments<'_>) {
    static LAST: Mutex<Option<(Instant, u64)>> = Mutex::new(None);
    let mut last = LAST.lock();
    let now = Instant::now();
    match &mut *last {
        Some((at, unlogged)) if now.duration_since(*at) < Duration::from_secs(1) => {
            *unlogged += 1;
        }
        _ => {
            let unlogged = last.map_or(0, |(_, unlogged)| unlogged);
            let more = if unlogged > 0 {
                format!(" ({unlogged} more refused in the second before)")
            } else {
                String::new()
            };
            log::warn!("{what}{more}");
            *last = Some((now, 0));
        }
    }
}
