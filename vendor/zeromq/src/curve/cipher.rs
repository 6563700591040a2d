//! The MESSAGE command (RFC 26): each frame of a message after the handshake, boxed with the
//! connection's session keys. One [`Sealer`] per connection's writer, one [`Opener`] per reader;
//! each keeps its direction's short nonce, which never repeats.

use crate::codec::CodecError;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use crypto_box::aead::generic_array::GenericArray;
use crypto_box::aead::AeadInPlace;
use crypto_box::SalsaBox;

use std::sync::Arc;

/// `\x07MESSAGE`, the short nonce, the box's tag and the flags byte.
pub(crate) const MESSAGE_OVERHEAD: usize = 8 + 8 + 16 + 1;
const MESSAGE: &[u8; 8] = b"\x07MESSAGE";
const MORE: u8 = 0x01;
const COMMAND: u8 = 0x02;

/// The nonce prefixes of MESSAGE boxes: the client's, then the server's.
pub(crate) const CLIENT_PREFIX: &[u8; 16] = b"CurveZMQMESSAGEC";
pub(crate) const SERVER_PREFIX: &[u8; 16] = b"CurveZMQMESSAGES";

fn nonce(prefix: &[u8; 16], short: u64) -> crypto_box::Nonce {
    let mut nonce = GenericArray::default();
    nonce[..16].copy_from_slice(prefix);
    nonce[16..].copy_from_slice(&short.to_be_bytes());
    nonce
}

/// Boxes outgoing frames.
pub(crate) struct Sealer {
    session: Arc<SalsaBox>,
    prefix: &'static [u8; 16],
    next: u64,
}

impl Sealer {
    /// `next` is the first short nonce not yet used in this direction by the handshake.
    pub(crate) fn new(session: Arc<SalsaBox>, prefix: &'static [u8; 16], next: u64) -> Self {
        Self {
            session,
            prefix,
            next,
        }
    }

    /// Appends `part` to `dst` as one MESSAGE frame.
    pub(crate) fn seal(
        &mut self,
        part: &[u8],
        more: bool,
        dst: &mut BytesMut,
    ) -> Result<(), CodecError> {
        let short = self.next;
        // A u64 of frames is never used up; should it be, the connection ends rather than
        // reuse a nonce.
        self.next = short
            .checked_add(1)
            .ok_or(CodecError::Other("CURVE nonces used up on this connection"))?;
        let body = MESSAGE_OVERHEAD + part.len();
        dst.reserve(body + 9);
        if body > 255 {
            dst.put_u8(0b0000_0010);
            dst.put_u64(body as u64);
        } else {
            dst.put_u8(0);
            dst.put_u8(body as u8);
        }
        dst.extend_from_slice(MESSAGE);
        dst.put_u64(short);
        let tag_at = dst.len();
        dst.extend_from_slice(&[0; 16]);
        let plain_at = dst.len();
        dst.put_u8(if more { MORE } else { 0 });
        dst.extend_from_slice(part);
        let tag = self
            .session
            .encrypt_in_place_detached(&nonce(self.prefix, short), b"", &mut dst[plain_at..])
            .map_err(|_| CodecError::Other("CURVE could not box a frame"))?;
        dst[tag_at..plain_at].copy_from_slice(&tag);
        Ok(())
    }
}

/// One opened MESSAGE frame.
pub(crate) struct Opened {
    pub(crate) data: Bytes,
    pub(crate) more: bool,
    pub(crate) command: bool,
}

/// Opens incoming frames.
pub(crate) struct Opener {
    session: Arc<SalsaBox>,
    prefix: &'static [u8; 16],
    last: u64,
}

impl Opener {
    /// `last` is the last short nonce the peer used in the handshake.
    pub(crate) fn new(session: Arc<SalsaBox>, prefix: &'static [u8; 16], last: u64) -> Self {
        Self {
            session,
            prefix,
            last,
        }
    }

    /// Opens one frame's body (in place). A frame that is not a MESSAGE, that reuses or goes
    /// back to an earlier nonce (a replay), or whose box does not open fails the connection.
    pub(crate) fn open(&mut self, mut frame: BytesMut) -> Result<Opened, CodecError> {
        if frame.len() < MESSAGE_OVERHEAD || &frame[..8] != MESSAGE {
            return Err(CodecError::Decode(
                "a frame after the CURVE handshake is not a MESSAGE",
            ));
        }
        let short = u64::from_be_bytes(frame[8..16].try_into().expect("eight bytes"));
        if short <= self.last {
            return Err(CodecError::Decode(
                "a CURVE MESSAGE reused an earlier nonce (a replay)",
            ));
        }
        let tag = *GenericArray::from_slice(&frame[16..32]);
        self.session
            .decrypt_in_place_detached(&nonce(self.prefix, short), b"", &mut frame[32..], &tag)
            .map_err(|_| CodecError::Decode("a CURVE MESSAGE did not open with the session key"))?;
        self.last = short;
        frame.advance(32);
        let flags = frame.get_u8();
        Ok(Opened {
            data: frame.freeze(),
            more: flags & MORE != 0,
            command: flags & COMMAND != 0,
        })
    }
}
