//! The CurveZMQ handshake (RFC 26): HELLO, WELCOME, INITIATE, READY, after the ZMTP greeting,
//! for a server (the side with the long-term key pair every client must know the public key
//! of) and for a client. Each side ends with the peer's metadata (its socket type and identity,
//! as a NULL READY command carries them) and the connection's codecs boxing every frame.
//!
//! The server keeps one connection's state for the length of its handshake (as libzmq does):
//! the cookie it sends in WELCOME is boxed with a key made for that connection alone, so an
//! INITIATE replayed from another connection does not open. Every failure ends the connection
//! before any of the peer's messages reach the socket.

use super::cipher::{Opener, Sealer, CLIENT_PREFIX, SERVER_PREFIX};
use super::keys::CurveKeyPair;
use crate::codec::{decode_properties, encode_properties, CodecError, FramedIo, Message};
use crate::error::{ZmqError, ZmqResult};

use bytes::{Bytes, BytesMut};
use crypto_box::aead::generic_array::GenericArray;
use crypto_box::aead::rand_core::RngCore;
use crypto_box::aead::{Aead, KeyInit, OsRng};
use crypto_box::{PublicKey, SalsaBox, SecretKey};
use crypto_secretbox::XSalsa20Poly1305;
use futures::{SinkExt, StreamExt};
use subtle::ConstantTimeEq;

use std::collections::HashMap;
use std::sync::Arc;

const HELLO: &[u8] = b"\x05HELLO";
const WELCOME: &[u8] = b"\x07WELCOME";
const INITIATE: &[u8] = b"\x08INITIATE";
const READY: &[u8] = b"\x05READY";
const ERROR: &[u8] = b"\x05ERROR";
const HELLO_SIZE: usize = 200;
const WELCOME_SIZE: usize = 168;
const COOKIE_SIZE: usize = 96;
/// INITIATE without metadata: name, cookie, short nonce, tag, C, vouch.
const INITIATE_MIN: usize = 9 + COOKIE_SIZE + 8 + 16 + 32 + 96;
const READY_MIN: usize = 6 + 8 + 16;

type Props = HashMap<String, Bytes>;

fn refused(why: &'static str) -> ZmqError {
    ZmqError::Codec(CodecError::Mechanism(why))
}

fn nonce(prefix: &[u8], tail: &[u8]) -> crypto_box::Nonce {
    let mut nonce = GenericArray::default();
    nonce[..prefix.len()].copy_from_slice(prefix);
    nonce[prefix.len()..].copy_from_slice(tail);
    nonce
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0; N];
    OsRng.fill_bytes(&mut bytes);
    bytes
}

fn key(bytes: &[u8]) -> PublicKey {
    PublicKey::from_slice(bytes).expect("32 bytes")
}

fn seal(session: &SalsaBox, nonce: &crypto_box::Nonce, plain: &[u8]) -> ZmqResult<Vec<u8>> {
    session
        .encrypt(nonce, plain)
        .map_err(|_| refused("CURVE could not box a handshake command"))
}

fn open(
    session: &SalsaBox,
    nonce: &crypto_box::Nonce,
    boxed: &[u8],
    why: &'static str,
) -> ZmqResult<Vec<u8>> {
    session.decrypt(nonce, boxed).map_err(|_| refused(why))
}

async fn send(io: &mut FramedIo, parts: &[&[u8]]) -> ZmqResult<()> {
    let command: BytesMut = parts.concat().as_slice().into();
    io.write_half
        .send(Message::Mechanism(command.freeze()))
        .await?;
    Ok(())
}

/// The next command of the handshake; anything else (a message before READY, a NULL READY,
/// the end of the connection) ends it. An ERROR command ends it with the peer's reason logged.
async fn receive(io: &mut FramedIo, expected: &'static str) -> ZmqResult<Bytes> {
    match io.read_half.next().await {
        Some(Ok(Message::Mechanism(command))) => {
            if command.starts_with(ERROR) {
                let reason = command.get(7..).unwrap_or_default();
                log::warn!(
                    "the CURVE peer refused the handshake: {}",
                    String::from_utf8_lossy(reason)
                );
                return Err(refused("the CURVE peer sent ERROR"));
            }
            Ok(command)
        }
        Some(Ok(_)) => Err(refused(expected)),
        Some(Err(error)) => Err(error.into()),
        None => Err(refused(
            "the peer closed the connection during the CURVE handshake",
        )),
    }
}

fn short_nonce(bytes: &[u8]) -> u64 {
    u64::from_be_bytes(bytes.try_into().expect("eight bytes"))
}

/// What the handshake gives the connection: the peer's metadata and the boxing codecs.
pub(crate) struct Session {
    pub(crate) properties: Props,
    sealer: Sealer,
    opener: Opener,
}

impl Session {
    /// Puts the session keys into `io`'s codecs: from here every frame is a MESSAGE.
    pub(crate) fn install(self, io: &mut FramedIo) -> Props {
        io.write_half.encoder_mut().seal_with(self.sealer);
        io.read_half.open_with(self.opener);
        self.properties
    }
}

/// The server's side, with its long-term key pair; `metadata` goes to the client in READY.
pub(crate) async fn server(
    io: &mut FramedIo,
    keys: &CurveKeyPair,
    metadata: &Props,
) -> ZmqResult<Session> {
    let hello = receive(io, "expected a CURVE HELLO").await?;
    if hello.len() != HELLO_SIZE || !hello.starts_with(HELLO) {
        return Err(refused("a CURVE HELLO must be 200 bytes"));
    }
    if hello[6..8] != [1, 0] {
        return Err(refused("a CURVE HELLO of a version other than 1.0"));
    }
    let client_transient = key(&hello[80..112]);
    let hello_nonce = short_nonce(&hello[112..120]);
    let signature = open(
        &SalsaBox::new(&client_transient, &keys.secret),
        &nonce(b"CurveZMQHELLO---", &hello[112..120]),
        &hello[120..200],
        "a CURVE HELLO that does not open with this server's key: the client does not \
         know the server's public key",
    )?;
    if signature.ct_eq(&[0u8; 64]).unwrap_u8() != 1 {
        return Err(refused("a CURVE HELLO whose signature box is not zeros"));
    }

    // WELCOME: this connection's transient key pair, and the cookie that carries it back.
    let transient = SecretKey::generate(&mut OsRng);
    let cookie_key = XSalsa20Poly1305::new(&GenericArray::from(random::<32>()));
    let mut remembered = client_transient.as_bytes().to_vec();
    remembered.extend_from_slice(&transient.to_bytes());
    let cookie_nonce = random::<16>();
    let mut cookie = cookie_nonce.to_vec();
    cookie.extend(
        cookie_key
            .encrypt(&nonce(b"COOKIE--", &cookie_nonce), remembered.as_slice())
            .map_err(|_| refused("CURVE could not box the cookie"))?,
    );
    let mut welcome_plain = transient.public_key().as_bytes().to_vec();
    welcome_plain.extend_from_slice(&cookie);
    let welcome_nonce = random::<16>();
    let welcome_box = seal(
        &SalsaBox::new(&client_transient, &keys.secret),
        &nonce(b"WELCOME-", &welcome_nonce),
        &welcome_plain,
    )?;
    send(io, &[WELCOME, &welcome_nonce, &welcome_box]).await?;

    let initiate = receive(io, "expected a CURVE INITIATE").await?;
    if initiate.len() < INITIATE_MIN || !initiate.starts_with(INITIATE) {
        return Err(refused("a CURVE INITIATE shorter than its fixed fields"));
    }
    let back = cookie_key
        .decrypt(
            &nonce(b"COOKIE--", &initiate[9..25]),
            &initiate[25..9 + COOKIE_SIZE],
        )
        .map_err(|_| refused("a CURVE INITIATE whose cookie is not this connection's"))?;
    if back.ct_eq(&remembered).unwrap_u8() != 1 {
        return Err(refused(
            "a CURVE INITIATE whose cookie is not this connection's",
        ));
    }
    let initiate_nonce = short_nonce(&initiate[105..113]);
    if initiate_nonce <= hello_nonce {
        return Err(refused("a CURVE INITIATE that reused the HELLO's nonce"));
    }
    let session = Arc::new(SalsaBox::new(&client_transient, &transient));
    let plain = open(
        &session,
        &nonce(b"CurveZMQINITIATE", &initiate[105..113]),
        &initiate[113..],
        "a CURVE INITIATE that does not open with the session key",
    )?;
    let client = key(&plain[..32]);
    let vouch = open(
        &SalsaBox::new(&client, &transient),
        &nonce(b"VOUCH---", &plain[32..48]),
        &plain[48..128],
        "a CURVE INITIATE whose vouch does not open with the client's key",
    )?;
    let mut vouched = client_transient.as_bytes().to_vec();
    vouched.extend_from_slice(keys.public.as_bytes());
    if vouch.ct_eq(&vouched).unwrap_u8() != 1 {
        return Err(refused("a CURVE INITIATE whose vouch names other keys"));
    }
    let properties = decode_properties(Bytes::copy_from_slice(&plain[128..]))?;

    let ready_short = 1u64.to_be_bytes();
    let mut metadata_bytes = BytesMut::new();
    encode_properties(metadata, &mut metadata_bytes);
    let ready_box = seal(
        &session,
        &nonce(b"CurveZMQREADY---", &ready_short),
        &metadata_bytes,
    )?;
    send(io, &[READY, &ready_short, &ready_box]).await?;
    Ok(Session {
        properties,
        sealer: Sealer::new(Arc::clone(&session), SERVER_PREFIX, 2),
        opener: Opener::new(session, CLIENT_PREFIX, initiate_nonce),
    })
}

/// The client's side: `server` is the server's long-term public key, `keys` the client's own
/// long-term pair; `metadata` goes to the server in INITIATE.
pub(crate) async fn client(
    io: &mut FramedIo,
    server: &PublicKey,
    keys: &CurveKeyPair,
    metadata: &Props,
) -> ZmqResult<Session> {
    let transient = SecretKey::generate(&mut OsRng);
    let hello_short = 1u64.to_be_bytes();
    let signature = seal(
        &SalsaBox::new(server, &transient),
        &nonce(b"CurveZMQHELLO---", &hello_short),
        &[0; 64],
    )?;
    let version = [1, 0];
    let padding = [0; 72];
    let public = transient.public_key();
    send(
        io,
        &[
            HELLO,
            &version,
            &padding,
            public.as_bytes(),
            &hello_short,
            &signature,
        ],
    )
    .await?;

    let welcome = receive(io, "expected a CURVE WELCOME").await?;
    if welcome.len() != WELCOME_SIZE || !welcome.starts_with(WELCOME) {
        return Err(refused("a CURVE WELCOME must be 168 bytes"));
    }
    let plain = open(
        &SalsaBox::new(server, &transient),
        &nonce(b"WELCOME-", &welcome[8..24]),
        &welcome[24..],
        "a CURVE WELCOME that does not open: the server does not hold the expected key",
    )?;
    let server_transient = key(&plain[..32]);
    let cookie = &plain[32..];

    let vouch_nonce = random::<16>();
    let mut vouched = public.as_bytes().to_vec();
    vouched.extend_from_slice(server.as_bytes());
    let vouch = seal(
        &SalsaBox::new(&server_transient, &keys.secret),
        &nonce(b"VOUCH---", &vouch_nonce),
        &vouched,
    )?;
    let mut plain = keys.public.as_bytes().to_vec();
    plain.extend_from_slice(&vouch_nonce);
    plain.extend_from_slice(&vouch);
    let mut metadata_bytes = BytesMut::new();
    encode_properties(metadata, &mut metadata_bytes);
    plain.extend_from_slice(&metadata_bytes);
    let session = Arc::new(SalsaBox::new(&server_transient, &transient));
    let initiate_short = 2u64.to_be_bytes();
    let initiate_box = seal(
        &session,
        &nonce(b"CurveZMQINITIATE", &initiate_short),
        &plain,
    )?;
    send(io, &[INITIATE, cookie, &initiate_short, &initiate_box]).await?;

    let ready = receive(io, "expected a CURVE READY").await?;
    if ready.len() < READY_MIN || !ready.starts_with(READY) {
        return Err(refused("a CURVE READY shorter than its fixed fields"));
    }
    let metadata = open(
        &session,
        &nonce(b"CurveZMQREADY---", &ready[6..14]),
        &ready[14..],
        "a CURVE READY that does not open with the session key",
    )?;
    let properties = decode_properties(Bytes::from(metadata))?;
    Ok(Session {
        properties,
        sealer: Sealer::new(Arc::clone(&session), CLIENT_PREFIX, 3),
        opener: Opener::new(session, SERVER_PREFIX, short_nonce(&ready[6..14])),
    })
}
