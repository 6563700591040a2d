//! The connection file Jupyter writes for a kernel: ports, signing key and scheme, and, when
//! the kernel manager asked for transport encryption (jupyter_client's
//! `KernelManager.transport_encryption`), the CurveZMQ server key pair the kernel binds with.

use anyhow::{Context, Result, anyhow, bail};
use jupyter_protocol::ConnectionInfo;
use serde::Deserialize;
use std::path::Path;
use zeromq::CurveKeyPair;

/// What a kernel binds: the connection information and, for an encrypted kernel, its CURVE key
/// pair (every socket a CURVE server; clients must know the public key).
#[derive(Clone, Debug)]
pub struct KernelConnection {
    pub(crate) info: ConnectionInfo,
    pub(crate) curve: Option<CurveKeyPair>,
}

impl From<ConnectionInfo> for KernelConnection {
    /// An unencrypted kernel on `info`.
    fn from(info: ConnectionInfo) -> Self {
        Self { info, curve: None }
    }
}

/// The two fields jupyter_client 8.10 adds to a connection file for an encrypted kernel, in
/// Z85 text (RFC 32).
#[derive(Deserialize)]
struct CurveFields {
    curve_publickey: Option<String>,
    curve_secretkey: Option<String>,
}

impl KernelConnection {
    /// Reads `text`, a connection file's contents (`path` names it in errors).
    pub(crate) fn parse(text: &str, path: &Path) -> Result<Self> {
        let info = serde_json::from_str(text)
            .with_context(|| format!("parsing the connection file {}", path.display()))?;
        let fields: CurveFields = serde_json::from_str(text)
            .with_context(|| format!("parsing the connection file {}", path.display()))?;
        let curve = curve_keys(fields)
            .with_context(|| format!("the CURVE keys of the connection file {}", path.display()))?;
        Ok(Self { info, curve })
    }
}

/// Reads the connection file Jupyter writes for a kernel.
pub(crate) fn read_connection_file(path: &Path) -> Result<KernelConnection> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the connection file {}", path.display()))?;
    KernelConnection::parse(&text, path)
}

fn curve_keys(fields: CurveFields) -> Result<Option<CurveKeyPair>> {
    let (public, secret) = match (fields.curve_publickey, fields.curve_secretkey) {
        (None, None) => return Ok(None),
        (Some(public), Some(secret)) => (public, secret),
        (Some(_), None) => bail!(
            "curve_publickey is given without curve_secretkey; a kernel needs both (or \
             neither, for a kernel without transport encryption)"
        ),
        (None, Some(_)) => bail!(
            "curve_secretkey is given without curve_publickey; a kernel needs both (or \
             neither, for a kernel without transport encryption)"
        ),
    };
    let not_a_key =
        |field| anyhow!("{field} is not a CURVE key: a key is 40 characters of Z85 text (RFC 32)");
    let keys = CurveKeyPair::from_z85(&secret).map_err(|_| not_a_key("curve_secretkey"))?;
    zeromq::z85_decode_key(&public).map_err(|_| not_a_key("curve_publickey"))?;
    if keys.public_z85() != public {
        bail!(
            "curve_publickey is not the public key of curve_secretkey; clients would use a key \
             this kernel cannot answer to. Let the kernel manager write both"
        );
    }
    Ok(Some(keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str = r#"{"ip": "127.0.0.1", "transport": "tcp", "shell_port": 1,
        "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5, "key": "k",
        "signature_scheme": "hmac-sha256""#;

    fn parse(extra: &str) -> Result<KernelConnection> {
        KernelConnection::parse(&format!("{PLAIN}{extra}}}"), Path::new("kernel-1.json"))
    }

    fn error(extra: &str) -> String {
        format!("{:#}", parse(extra).unwrap_err())
    }

    #[test]
    fn a_file_without_keys_is_an_unencrypted_kernel() {
        let connection = parse("").unwrap();
        assert!(connection.curve.is_none());
        assert_eq!(connection.info.shell_port, 1);
    }

    #[test]
    fn the_key_pair_jupyter_client_writes_is_read() {
        let keys = CurveKeyPair::generate();
        let secret = zeromq::z85_encode_key(&keys.secret_key());
        let extra = format!(
            r#", "curve_publickey": "{}", "curve_secretkey": "{secret}""#,
            keys.public_z85()
        );
        let read = parse(&extra).unwrap().curve.unwrap();
        assert_eq!(read.public_key(), keys.public_key());
    }

    #[test]
    fn a_half_wrong_or_mismatched_pair_is_refused_by_name() {
        let keys = CurveKeyPair::generate();
        let other = CurveKeyPair::generate();
        let secret = zeromq::z85_encode_key(&keys.secret_key());
        let public = keys.public_z85();
        let cases = [
            (
                format!(r#", "curve_publickey": "{public}""#),
                "without curve_secretkey",
            ),
            (
                format!(r#", "curve_secretkey": "{secret}""#),
                "without curve_publickey",
            ),
            (
                format!(r#", "curve_publickey": "{public}", "curve_secretkey": "short""#),
                "curve_secretkey is not a CURVE key: a key is 40 characters of Z85",
            ),
            (
                format!(
                    r#", "curve_publickey": "{}", "curve_secretkey": "{secret}""#,
                    other.public_z85()
                ),
                "is not the public key of curve_secretkey",
            ),
        ];
        for (extra, expected) in cases {
            let error = error(&extra);
            assert!(error.contains(expected), "{extra}: {error}");
            assert!(error.contains("kernel-1.json"), "{error}");
            assert!(
                !error.contains(&secret),
                "the secret key in an error: {error}"
            );
        }
    }
}
