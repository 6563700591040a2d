//! Fuzzing shell and control: random frames, bad JSON, valid signatures over garbage. The kernel
//! and the notebook's variables must survive all of it.

use crate::protocol::frames;
use crate::support::{Kernel, REPLY, children};
use std::time::Duration;
use zeromq::{Socket, SocketRecv, SocketSend};

/// xorshift64*: reproducible from the seed the test prints.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// Text with ASCII, control characters, `$@\`\\`, zero-width and bidi marks, CJK, emoji.
    fn unicode(&mut self, max: usize) -> String {
        const ODD: &[char] = &[
            '$',
            '@',
            '`',
            '\\',
            '"',
            '{',
            '}',
            '\n',
            '\t',
            '\0',
            '\u{200b}',
            '\u{2066}',
            '\u{202e}',
            '\u{feff}',
            'é',
            '中',
            '🦀',
            '\u{10ffff}',
        ];
        let len = self.below(max + 1);
        (0..len)
            .map(|_| match self.below(3) {
                0 => ODD[self.below(ODD.len())],
                1 => char::from_u32(self.below(0x3000) as u32).unwrap_or('?'),
                _ => (b'a' + self.below(26) as u8) as char,
            })
            .collect()
    }

    fn json(&mut self, depth: usize) -> serde_json::Value {
        use serde_json::Value;
        match self.below(if depth == 0 { 4 } else { 6 }) {
            0 => Value::Null,
            1 => Value::from(self.next() as i64),
            2 => Value::from(self.unicode(20)),
            3 => Value::Bool(self.below(2) == 0),
            4 => Value::Array((0..self.below(4)).map(|_| self.json(depth - 1)).collect()),
            _ => {
                let keys = [
                    "code",
                    "cursor_pos",
                    "detail_level",
                    "msg_type",
                    "comm_id",
                    "target_name",
                    "data",
                    "hist_access_type",
                    "n",
                    "x",
                ];
                let mut map = serde_json::Map::new();
                for _ in 0..self.below(5) {
                    map.insert(
                        keys[self.below(keys.len())].to_owned(),
                        self.json(depth - 1),
                    );
                }
                Value::Object(map)
            }
        }
    }
}

/// SHA-256 (FIPS 180-4), for signing fuzzed frames as a client with the key would.
fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in message.chunks(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes(word.try_into().unwrap());
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for (h, v) in h.iter_mut().zip(v) {
            *h = h.wrapping_add(v);
        }
    }
    let mut out = [0u8; 32];
    for (i, word) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_be_bytes());
    }
    out
}

fn hmac_sha256_hex(key: &[u8], parts: &[&[u8]]) -> String {
    let mut block = [0u8; 64];
    block[..key.len()].copy_from_slice(key);
    let inner: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    let outer: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    let mut message = inner;
    for part in parts {
        message.extend_from_slice(part);
    }
    let mut second = outer;
    second.extend_from_slice(&sha256(&message));
    sha256(&second).iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn hmac_matches_the_rfc_4231_vector() {
    // RFC 4231 test case 2.
    assert_eq!(
        hmac_sha256_hex(b"Jefe", &[b"what do ya want ", b"for nothing?"]),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
}

/// Request types that do no lasting harm when fuzzed. Not `shutdown_request` (it would end
/// the kernel), nor `execute_request` (a random cell compiles for a while), nor completion and
/// hover (their own test).
const TYPES: &[&str] = &[
    "kernel_info_request",
    "is_complete_request",
    "history_request",
    "comm_info_request",
    "comm_open",
    "comm_msg",
    "comm_close",
    "interrupt_request",
    "debug_request",
    "usage_request",
    "input_reply",
    "no_such_request",
    "",
];

/// One fuzzed message: random frames, a signed message with bad JSON, or a signed message
/// whose JSON is valid and whose content is garbage.
fn fuzzed(rng: &mut Rng, key: &[u8], types: &[&str]) -> Vec<Vec<u8>> {
    let header = |rng: &mut Rng| {
        serde_json::json!({
            "msg_id": format!("fuzz-{}", rng.next()),
            "username": rng.unicode(8),
            "session": "fuzz",
            "date": "2026-11-23T00:00:00Z",
            "msg_type": types[rng.below(types.len())],
            "version": "5.3",
        })
        .to_string()
        .into_bytes()
    };
    let sign = |parts: Vec<Vec<u8>>| {
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let signature = hmac_sha256_hex(key, &refs).into_bytes();
        let mut all = vec![b"<IDS|MSG>".to_vec(), signature];
        all.extend(parts);
        all
    };
    match rng.below(4) {
        0 => (0..1 + rng.below(8)).map(|_| rng.bytes(200)).collect(),
        1 => {
            // Valid signature, broken JSON somewhere.
            let mut parts = vec![header(rng), b"{}".to_vec(), b"{}".to_vec(), b"{}".to_vec()];
            let broken = rng.below(4);
            parts[broken] = match rng.below(3) {
                0 => rng.bytes(60),
                1 => {
                    let mut cut = parts[broken].clone();
                    cut.truncate(rng.below(cut.len() + 1));
                    cut
                }
                _ => b"[1, 2".to_vec(),
            };
            sign(parts)
        }
        _ => {
            // Valid signature, valid JSON, garbage content (and parents, metadata, buffers).
            let mut parts = vec![
                header(rng),
                rng.json(2).to_string().into_bytes(),
                rng.json(2).to_string().into_bytes(),
                rng.json(3).to_string().into_bytes(),
            ];
            for _ in 0..rng.below(3) {
                parts.push(rng.bytes(40));
            }
            sign(parts)
        }
    }
}

/// Reads whatever the kernel answered on `socket`, so its queue never fills.
async fn drain(socket: &mut zeromq::DealerSocket) {
    while let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(1), socket.recv()).await {}
}

async fn assert_alive(kernel: &mut Kernel, evaluation: i32, sent: usize) {
    tokio::time::timeout(REPLY, kernel.heartbeat.single_heartbeat())
        .await
        .unwrap_or_else(|_| panic!("no heartbeat after {sent} fuzzed messages"))
        .unwrap();
    kernel.kernel_info().await;
    assert!(
        children(kernel.pid()).contains(&evaluation),
        "the evaluation process died after {sent} fuzzed messages\n{}",
        kernel.log()
    );
}

async fn fuzz(kernel: &mut Kernel, types: &[&str], count: usize) -> usize {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("fuzz seed {seed:#x}");
    let mut rng = Rng(seed);
    let key = kernel.info.key.clone().into_bytes();
    let mut shell = zeromq::DealerSocket::new();
    shell.connect(&kernel.info.shell_url()).await.unwrap();
    let mut control = zeromq::DealerSocket::new();
    control.connect(&kernel.info.control_url()).await.unwrap();
    let evaluation = *children(kernel.pid())
        .first()
        .expect("no evaluation process");
    for sent in 1..=count {
        let message = frames(fuzzed(&mut rng, &key, types));
        let socket = if rng.below(3) == 0 {
            &mut control
        } else {
            &mut shell
        };
        socket.send(message).await.unwrap();
        drain(&mut shell).await;
        drain(&mut control).await;
        if sent % 500 == 0 {
            assert_alive(kernel, evaluation, sent).await;
        }
    }
    assert_alive(kernel, evaluation, count).await;
    count
}

#[tokio::test(flavor = "multi_thread")]
async fn thousands_of_fuzzed_messages_leave_the_kernel_and_its_variables_alive() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok("let kept = vec![1, 2, 3];\nlet t = Tensor::ones([2], (Kind::Float, Device::Cpu));")
        .await;
    let survived = fuzz(&mut kernel, TYPES, 3000).await;
    eprintln!("{survived} fuzzed messages survived");
    assert_eq!(
        kernel
            .run_ok("kept.len() as f64 + t.sum(Kind::Float).double_value(&[])")
            .await
            .result()
            .as_deref(),
        Some("5.0")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fuzzed_completion_and_hover_requests_leave_the_engine_alive() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = vec![1, 2, 3];").await;
    let evaluation = *children(kernel.pid())
        .first()
        .expect("no evaluation process");
    let mut rng = Rng(0x5eed_1234_5678_9abd);
    // Random unicode in code around a real variable, the inputs that once killed the engine.
    for sent in 1..=200 {
        let code = format!("{}kept.{}", rng.unicode(12), rng.unicode(6));
        let cursor_pos = rng.below(code.chars().count() + 1);
        if rng.below(2) == 0 {
            kernel
                .request(jupyter_protocol::CompleteRequest { code, cursor_pos })
                .await;
        } else {
            kernel
                .request(jupyter_protocol::InspectRequest {
                    code,
                    cursor_pos,
                    detail_level: Some(0),
                })
                .await;
        }
        if sent % 50 == 0 {
            assert_alive(&mut kernel, evaluation, sent).await;
        }
    }
    assert_eq!(
        kernel.run_ok("kept.len()").await.result().as_deref(),
        Some("3")
    );
}
