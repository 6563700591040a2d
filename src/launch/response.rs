//! The connection information, encrypted and sent to the gateway's response address.
//!
//! The format is the launchers' "version 1" payload, which both Enterprise Gateway's and
//! gateway_provisioners' `ResponseManager._decode_payload` read:
//!
//! 1. the connection file's JSON plus `pid`, `pgid`, `comm_port` and `kernel_id`;
//! 2. AES-128 in ECB mode with PKCS#7 padding under a fresh random key, then base64;
//! 3. that AES key encrypted with the gateway's RSA public key (PKCS#1 v1.5), then base64;
//! 4. `{"version": 1, "key": <3>, "conn_info": <2>}` as JSON, base64, written to one TCP
//!    connection, which is then closed (the gateway reads until end of stream).
//!
//! The public key arrives as the base64 of its DER `SubjectPublicKeyInfo` (the gateway strips
//! the PEM armour). Only encryption happens here; the RSA timing issue of private-key
//! operations (RUSTSEC-2023-0071) does not apply.

use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit, generic_array::GenericArray};
use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rsa::pkcs8::DecodePublicKey;
use rsa::{Pkcs1v15Encrypt, RsaPublicKey};
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// What `"version"` says; the gateways read version 1 (and a legacy 0).
const LAUNCHER_VERSION: u32 = 1;
/// How long to try to reach the gateway: a response address that does not answer fails the
/// launch instead of leaving the kernel running for nobody.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Reads the gateway's `--public-key`.
pub(crate) fn parse_public_key(text: &str) -> Result<RsaPublicKey> {
    let der = BASE64
        .decode(text.trim())
        .context("it is not base64")
        .and_then(|der| {
            RsaPublicKey::from_public_key_der(&der)
                .map_err(|e| anyhow::anyhow!("it is not an RSA SubjectPublicKeyInfo ({e})"))
        });
    der.with_context(|| {
        format!(
            "the gateway's --public-key {:?} cannot be read (it must be the base64 DER of \
             the gateway's RSA public key, as Enterprise Gateway and gateway_provisioners pass \
             it: check that the kernelspec's argv passes {{public_key}} unchanged)",
            abbreviate(text)
        )
    })
}

/// The base64 payload for `connection_info` (a JSON object), encrypted for `public_key`.
pub(crate) fn encrypt(
    connection_info: &serde_json::Value,
    public_key: &RsaPublicKey,
) -> Result<String> {
    let aes_key: [u8; 16] = rand::random();
    let encrypted_info = aes_ecb_pkcs7(&aes_key, &serde_json::to_vec(connection_info)?);
    let encrypted_key = public_key
        .encrypt(&mut rand::thread_rng(), Pkcs1v15Encrypt, &aes_key)
        .context("encrypting the AES key with the gateway's public key")?;
    let payload = serde_json::json!({
        "version": LAUNCHER_VERSION,
        "key": BASE64.encode(encrypted_key),
        "conn_info": BASE64.encode(encrypted_info),
    });
    Ok(BASE64.encode(serde_json::to_vec(&payload)?))
}

fn aes_ecb_pkcs7(key: &[u8; 16], plain: &[u8]) -> Vec<u8> {
    let cipher = Aes128::new(GenericArray::from_slice(key));
    let pad = 16 - plain.len() % 16;
    let mut data = plain.to_vec();
    data.extend(std::iter::repeat_n(pad as u8, pad));
    for block in data.chunks_exact_mut(16) {
        cipher.encrypt_block(GenericArray::from_mut_slice(block));
    }
    data
}

/// Sends `payload` to the gateway's `<ip>:<port>`, failing with what to check.
pub(crate) fn send(response_address: &str, payload: &str) -> Result<()> {
    let address = resolve(response_address)?;
    let explain = |what: &str, error: std::io::Error| {
        anyhow::anyhow!(
            "{what} the gateway's response address {response_address} ({error}): the gateway \
             that launched this kernel is gone, or a firewall or network policy blocks the \
             kernel from reaching it; the gateway will report a launch timeout"
        )
    };
    let mut stream = TcpStream::connect_timeout(&address, CONNECT_TIMEOUT)
        .map_err(|e| explain("cannot connect to", e))?;
    stream
        .set_write_timeout(Some(CONNECT_TIMEOUT))
        .and_then(|()| stream.write_all(payload.as_bytes()))
        .and_then(|()| stream.shutdown(std::net::Shutdown::Write))
        .map_err(|e| explain("cannot send the connection information to", e))
}

fn resolve(response_address: &str) -> Result<SocketAddr> {
    let Some((host, port)) = response_address.rsplit_once(':') else {
        bail!("--response-address {response_address:?} is not <ip>:<port>");
    };
    let port: u16 = port
        .parse()
        .with_context(|| format!("--response-address {response_address:?}: bad port"))?;
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("--response-address {response_address:?}: unknown host"))?
        .next()
        .with_context(|| format!("--response-address {response_address:?}: no address"))
}

/// The first and last characters of a long argument, for an error message.
fn abbreviate(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= 24 {
        return text.to_owned();
    }
    let head: String = chars[..12].iter().collect();
    let tail: String = chars[chars.len() - 8..].iter().collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes::cipher::BlockDecrypt;
    use rsa::RsaPrivateKey;
    use rsa::pkcs8::EncodePublicKey;

    /// Decrypts as the gateway's ResponseManager does, step by step.
    fn gateway_decode(payload: &str, private: &RsaPrivateKey) -> serde_json::Value {
        let outer: serde_json::Value =
            serde_json::from_slice(&BASE64.decode(payload).unwrap()).unwrap();
        assert_eq!(outer["version"], 1);
        let key_bytes = BASE64.decode(outer["key"].as_str().unwrap()).unwrap();
        let aes_key = private.decrypt(Pkcs1v15Encrypt, &key_bytes).unwrap();
        let cipher = Aes128::new(GenericArray::from_slice(&aes_key));
        let mut data = BASE64.decode(outer["conn_info"].as_str().unwrap()).unwrap();
        for block in data.chunks_exact_mut(16) {
            cipher.decrypt_block(GenericArray::from_mut_slice(block));
        }
        let pad = *data.last().unwrap() as usize;
        assert!(
            (1..=16).contains(&pad) && data[data.len() - pad..].iter().all(|&b| b == pad as u8)
        );
        data.truncate(data.len() - pad);
        serde_json::from_slice(&data).unwrap()
    }

    #[test]
    fn payload_decrypts_with_the_gateways_private_key() {
        let private = RsaPrivateKey::new(&mut rand::thread_rng(), 1024).unwrap();
        let der = private.to_public_key().to_public_key_der().unwrap();
        let public = parse_public_key(&BASE64.encode(der.as_bytes())).unwrap();
        let info = serde_json::json!({"shell_port": 1, "key": "k", "kernel_id": "abc"});
        assert_eq!(
            gateway_decode(&encrypt(&info, &public).unwrap(), &private),
            info
        );
    }

    #[test]
    fn a_key_that_is_not_a_public_key_is_named_in_the_error() {
        for bad in ["not base64!", "AAAA"] {
            let error = format!("{:#}", parse_public_key(bad).unwrap_err());
            assert!(
                error.contains("--public-key") && error.contains(bad),
                "{error}"
            );
        }
    }

    #[test]
    fn a_closed_response_port_fails_at_once() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = std::time::Instant::now();
        let error = format!("{:#}", send(&format!("127.0.0.1:{port}"), "x").unwrap_err());
        assert!(error.contains("response address"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
