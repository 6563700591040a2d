//! Downloads against an HTTP server on loopback that serves bytes the tests write: nothing
//! leaves the machine. Needs the `download` feature (`cargo test -p tchbook-fetch --features
//! download`; the workspace build turns it on through the kernel).
#![cfg(feature = "download")]

use md5::Md5;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Mutex;
use tchbook_fetch::{
    Expected, FetchError, KnownDataset, Observer, STANDIN_MARKER, download, fetch,
};

/// One test at a time touches `TCHBOOK_DATA_MIRROR`.
static MIRROR: Mutex<()> = Mutex::new(());

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tchbook-fetch-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Serves `body` to the next `requests` requests; returns the base URL.
fn serve(body: &'static [u8], requests: usize) -> String {
    serve_announcing(body, Some(body.len()), requests)
}

/// Serves `body` with `Content-Length: announced` (none: the body runs to the connection's
/// end, as a server streaming without a length sends it).
fn serve_announcing(body: &'static [u8], announced: Option<usize>, requests: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(requests) {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = stream.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
            }
            let length = announced.map_or(String::new(), |n| format!("Content-Length: {n}\r\n"));
            let head = format!("HTTP/1.1 200 OK\r\n{length}Connection: close\r\n\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body);
        }
    });
    format!("http://{addr}/")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What `bytes` are: their size and sums, as the catalog lists a file's.
fn expected_of(bytes: &[u8]) -> (u64, String, String) {
    (
        bytes.len() as u64,
        hex(&Sha256::digest(bytes)),
        hex(&Md5::digest(bytes)),
    )
}

fn expected(sums: &(u64, String, String)) -> Expected<'_> {
    Expected {
        size: sums.0,
        sha256: &sums.1,
        md5: &sums.2,
    }
}

#[derive(Default)]
struct Recorder {
    started: Vec<(String, Option<u64>)>,
    bytes: usize,
    finished: usize,
}

impl Observer for Recorder {
    fn start(&mut self, file: &str, total: Option<u64>) {
        self.started.push((file.to_string(), total));
    }
    fn bytes(&mut self, n: usize) {
        self.bytes += n;
    }
    fn finish(&mut self) {
        self.finished += 1;
    }
}

#[test]
fn a_download_with_the_right_checksum_lands_whole_and_reports_its_progress() {
    const BODY: &[u8] = b"the bytes of a tiny data file";
    let url = format!("{}tiny.gz", serve(BODY, 1));
    let dest = scratch("ok").join("tiny.gz");
    let mut seen = Recorder::default();
    download(&url, &dest, &expected(&expected_of(BODY)), &mut seen).unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), BODY);
    assert!(!dest.with_extension("part").exists());
    assert_eq!(
        seen.started,
        [("tiny.gz".to_string(), Some(BODY.len() as u64))]
    );
    assert_eq!((seen.bytes, seen.finished), (BODY.len(), 1));
}

/// Downloads `body` (served with `Content-Length: announced`) as the file `sums` describe,
/// expecting a refusal; checks that nothing was left behind and returns the error and what
/// the observer saw.
fn refusal(
    name: &str,
    body: &'static [u8],
    announced: Option<usize>,
    sums: &(u64, String, String),
) -> (String, Recorder) {
    let url = format!("{}tiny.gz", serve_announcing(body, announced, 1));
    let dest = scratch(name).join("tiny.gz");
    let mut seen = Recorder::default();
    let error = download(&url, &dest, &expected(sums), &mut seen).unwrap_err();
    assert!(
        !dest.exists() && !dest.with_extension("part").exists(),
        "{error}: a refused download must leave nothing behind"
    );
    (error, seen)
}

#[test]
fn a_download_with_the_wrong_checksum_leaves_nothing_behind() {
    const BODY: &[u8] = b"not what was promised";
    // Same length as the real bytes: only the sums can tell them apart.
    let real = expected_of(b"the real bytes, truly");
    let (e, _) = refusal("bad", BODY, Some(BODY.len()), &real);
    assert!(
        e.contains("checksum mismatch: SHA-256") && e.contains(&real.1),
        "{e}"
    );
}

#[test]
fn a_file_with_the_right_md5_but_another_sha256_is_refused() {
    // MD5 is broken: a file made to match torchvision's MD5 must still fail on SHA-256.
    const BODY: &[u8] = b"colliding bytes";
    let mut sums = expected_of(BODY);
    sums.1 = hex(&Sha256::digest(b"the publisher's bytes"));
    let (e, _) = refusal("md5-only", BODY, Some(BODY.len()), &sums);
    assert!(e.contains("SHA-256"), "{e}");
}

#[test]
fn a_server_sending_more_than_the_file_is_cut_off_and_leaves_nothing() {
    // 4 MiB where the catalog says 16 bytes, without a Content-Length (a stream): the download
    // stops one byte past the size instead of writing what the server sends.
    static FLOOD: [u8; 4 << 20] = [b'x'; 4 << 20];
    let sums = expected_of(&FLOOD[..16]);
    let (e, seen) = refusal("flood", &FLOOD, None, &sums);
    assert!(
        e.contains("17 bytes arrived before the download was stopped")
            && e.contains("the file is 16 bytes"),
        "{e}"
    );
    assert_eq!(seen.bytes, 17);

    // Announced too large: refused before the body is read.
    let (e, seen) = refusal("announced", &FLOOD, Some(FLOOD.len()), &sums);
    assert!(
        e.contains("announced 4194304 bytes; the file is 16 bytes"),
        "{e}"
    );
    assert_eq!((seen.started.len(), seen.bytes), (0, 0));
}

#[test]
fn a_short_file_is_refused_by_its_size() {
    const BODY: &[u8] = b"half";
    let (e, _) = refusal("short", BODY, Some(BODY.len()), &expected_of(b"half of it"));
    assert!(e.contains("4 bytes arrived; the file is 10 bytes"), "{e}");
}

#[test]
fn fetch_fails_with_a_clear_message_when_offline_or_when_the_checksum_is_wrong() {
    let _one = MIRROR.lock().unwrap_or_else(|e| e.into_inner());
    // Port 9 (discard) on loopback: nothing listens, the connection is refused.
    // SAFETY: only tests holding MIRROR touch the variable.
    unsafe { std::env::set_var(tchbook_wire::env::DATA_MIRROR, "http://127.0.0.1:9/") };
    let root = scratch("offline");
    let e = fetch(KnownDataset::Mnist, &root, &mut ()).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, FetchError::Unreachable { .. }), "{e:?}");
    assert!(
        text.contains("could not download MNIST")
            && text.contains("127.0.0.1:9")
            && text.contains(&root.join("MNIST/raw").display().to_string()),
        "{text}"
    );

    let mirror = serve(b"not the real Fashion-MNIST", 4);
    // SAFETY: only tests holding MIRROR touch the variable, and this one holds it.
    unsafe { std::env::set_var(tchbook_wire::env::DATA_MIRROR, &mirror) };
    let root = scratch("mismatch");
    let text = fetch(KnownDataset::FashionMnist, &root, &mut ())
        .unwrap_err()
        .to_string();
    // SAFETY: only tests holding MIRROR touch the variable, and this one holds it.
    unsafe { std::env::remove_var(tchbook_wire::env::DATA_MIRROR) };
    assert!(
        text.contains("26 bytes arrived; the file is 26421880 bytes"),
        "{text}"
    );
    let raw = root.join("FashionMNIST/raw");
    assert_eq!(std::fs::read_dir(&raw).map(|d| d.count()).unwrap_or(0), 0);
}

#[test]
fn real_files_already_there_are_not_downloaded_again_but_stand_ins_are_replaced() {
    let root = scratch("present");
    let dir = KnownDataset::Mnist.dir(&root);
    std::fs::create_dir_all(&dir).unwrap();
    for f in KnownDataset::Mnist.files() {
        std::fs::write(dir.join(f), b"real").unwrap();
    }
    // No mirror is reachable (the lock keeps other tests' mirrors away): a download would fail.
    let _one = MIRROR.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: only tests holding MIRROR touch the variable, and this one holds it.
    unsafe { std::env::set_var(tchbook_wire::env::DATA_MIRROR, "http://127.0.0.1:9/") };
    assert_eq!(fetch(KnownDataset::Mnist, &root, &mut ()).unwrap(), dir);
    std::fs::write(dir.join(STANDIN_MARKER), "stand-in").unwrap();
    let e = fetch(KnownDataset::Mnist, &root, &mut ());
    // SAFETY: only tests holding MIRROR touch the variable, and this one holds it.
    unsafe { std::env::remove_var(tchbook_wire::env::DATA_MIRROR) };
    assert!(
        e.is_err(),
        "stand-ins must be replaced by a download, not kept"
    );
}
