//! The command line of `tchbook launch`, as Enterprise Gateway and gateway_provisioners write it.
//!
//! The gateway fills the kernelspec's argv templates (`{kernel_id}`, `{port_range}`,
//! `{response_address}`, `{public_key}`, `{transport_encryption}`) and may add the arguments it
//! passes every launcher (`--kernel-class-name`, `--spark-context-initialization-mode`,
//! `--cluster-type`). In a kernel pod or container there is no argv at all: the pod-launching
//! script hands the same four values over in the environment (`KERNEL_ID`, `PORT_RANGE`,
//! `RESPONSE_ADDRESS`, `PUBLIC_KEY`, and `TRANSPORT_ENCRYPTION` from gateway_provisioners), which
//! is what the launchers' bootstrap scripts read. Each value comes from its flag, else from that
//! variable.

use anyhow::{Result, bail};
use clap::Args;

/// Arguments of `tchbook launch`; see the module docs for where each comes from.
#[derive(Args, Debug, Clone, Default)]
pub struct LaunchArgs {
    /// The kernel's id, as the gateway knows it (default: $KERNEL_ID).
    #[arg(long, alias = "RemoteProcessProxy.kernel-id", value_name = "ID")]
    pub(crate) kernel_id: Option<String>,
    /// Where to send the encrypted connection information, `<ip>:<port>`
    /// (default: $RESPONSE_ADDRESS).
    #[arg(
        long,
        alias = "RemoteProcessProxy.response-address",
        value_name = "IP:PORT"
    )]
    pub(crate) response_address: Option<String>,
    /// The gateway's RSA public key: base64 DER, the PEM body without its header lines
    /// (default: $PUBLIC_KEY).
    #[arg(long, alias = "RemoteProcessProxy.public-key", value_name = "KEY")]
    pub(crate) public_key: Option<String>,
    /// The ports the kernel may use, `<lower>..<upper>`; `0..0` or absent means any
    /// (default: $PORT_RANGE).
    #[arg(
        long,
        alias = "RemoteProcessProxy.port-range",
        value_name = "LOWER..UPPER"
    )]
    pub(crate) port_range: Option<String>,
    /// The address the kernel's sockets bind, written into the connection information; the
    /// gateway replaces it with the host it launched on when it connects.
    #[arg(long, default_value = "0.0.0.0", value_name = "IP")]
    pub(crate) ip: String,
    /// CurveZMQ policy from gateway_provisioners (`auto` or `required`: the launcher makes a
    /// key pair, sends it with the connection information and binds every socket encrypted;
    /// `disabled`, empty or left unfilled by the gateway: no encryption)
    /// (default: $TRANSPORT_ENCRYPTION).
    #[arg(long, value_name = "POLICY")]
    pub(crate) transport_encryption: Option<String>,
    /// Accepted for the gateways' sake and ignored (an ipykernel class name).
    #[arg(long, hide = true, value_name = "NAME")]
    kernel_class_name: Option<String>,
    /// Accepted for the gateways' sake and ignored (Spark only).
    #[arg(
        long,
        hide = true,
        alias = "RemoteProcessProxy.spark-context-initialization-mode",
        value_name = "MODE"
    )]
    spark_context_initialization_mode: Option<String>,
    /// Accepted for the gateways' sake and ignored (Spark or Dask only).
    #[arg(long, hide = true, value_name = "TYPE")]
    cluster_type: Option<String>,
}

/// What a launch needs, resolved from flags and environment and checked.
#[derive(Debug, Clone)]
pub(crate) struct LaunchRequest {
    pub(crate) kernel_id: String,
    pub(crate) response_address: String,
    pub(crate) public_key: String,
    pub(crate) port_range: Option<String>,
    pub(crate) ip: String,
    /// Whether the gateway asked for CurveZMQ keys.
    pub(crate) encrypted: bool,
}

impl LaunchArgs {
    /// Fills what the flags left out from the environment a kernel pod is given, and refuses
    /// what tchbook cannot honour.
    pub(crate) fn resolve(&self) -> Result<LaunchRequest> {
        let from_env = |flag: &Option<String>, name: &str| {
            flag.clone()
                .or_else(|| std::env::var(name).ok())
                .filter(|value| !is_unfilled(value))
        };
        let required = |value: Option<String>, flag: &str, var: &str| match value {
            Some(value) => Ok(value),
            None => bail!(
                "{flag} is missing (and ${var} is not set): `tchbook launch` is started by \
                 Enterprise Gateway or gateway_provisioners, whose kernelspec passes it; to run \
                 a kernel yourself use `tchbook kernel --connection-file FILE`"
            ),
        };
        let encrypted = match from_env(&self.transport_encryption, "TRANSPORT_ENCRYPTION")
            .map(|policy| policy.trim().to_ascii_lowercase())
            .as_deref()
        {
            Some("auto" | "required") => true,
            None | Some("disabled") => false,
            Some(other) => bail!(
                "--transport-encryption {other:?} is not a policy: the gateway passes `auto`, \
                 `required` or `disabled` (jupyter_client's `transport_encryption`)"
            ),
        };
        Ok(LaunchRequest {
            kernel_id: required(
                from_env(&self.kernel_id, "KERNEL_ID"),
                "--kernel-id",
                "KERNEL_ID",
            )?,
            response_address: required(
                from_env(&self.response_address, "RESPONSE_ADDRESS"),
                "--response-address",
                "RESPONSE_ADDRESS",
            )?,
            public_key: required(
                from_env(&self.public_key, "PUBLIC_KEY"),
                "--public-key",
                "PUBLIC_KEY",
            )?,
            port_range: from_env(&self.port_range, "PORT_RANGE"),
            ip: self.ip.clone(),
            encrypted,
        })
    }
}

/// A template the gateway left as it was (`{port_range}` from a server that does not fill it),
/// which the launchers treat as absent.
fn is_unfilled(value: &str) -> bool {
    value.is_empty() || (value.starts_with('{') && value.ends_with('}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(kernel_id: &str, policy: Option<&str>) -> LaunchArgs {
        LaunchArgs {
            kernel_id: Some(kernel_id.to_owned()),
            response_address: Some("10.0.0.1:8877".to_owned()),
            public_key: Some("AAAA".to_owned()),
            port_range: Some("{port_range}".to_owned()),
            transport_encryption: policy.map(str::to_owned),
            ..LaunchArgs::default()
        }
    }

    #[test]
    fn unfilled_templates_count_as_absent() {
        let request = args("k1", Some("{transport_encryption}"))
            .resolve()
            .unwrap();
        assert_eq!(request.kernel_id, "k1");
        assert_eq!(request.port_range, None);
    }

    #[test]
    fn auto_and_required_ask_for_keys_and_anything_else_is_named() {
        for (policy, encrypted) in [
            (Some("required"), true),
            (Some("Auto"), true),
            (Some("disabled"), false),
            (Some(""), false),
            (Some("{transport_encryption}"), false),
        ] {
            let request = args("k1", policy).resolve().unwrap();
            assert_eq!(request.encrypted, encrypted, "{policy:?}");
        }
        let error = args("k1", Some("curvy")).resolve().unwrap_err();
        assert!(
            format!("{error}").contains("\"curvy\" is not a policy"),
            "{error}"
        );
    }
}
