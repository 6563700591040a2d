use super::*;
use std::collections::{BTreeSet, HashMap};

/// The prelude's dependencies on this machine's platform as cargo resolves them for this
/// workspace (every feature a cell may turn on): the names of the crates a cell links
/// (reached through normal dependencies alone), of those only a build runs (reached through
/// a build dependency or a proc macro), and of the proc macros.
fn prelude_graph() -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let rustc = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .unwrap();
    let rustc = String::from_utf8(rustc.stdout).unwrap();
    let host = rustc
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .unwrap();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("prelude/Cargo.toml");
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--all-features",
        ])
        .args(["--filter-platform", host, "--manifest-path"])
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut names = HashMap::new();
    let mut proc_macros = BTreeSet::new();
    for package in metadata["packages"].as_array().unwrap() {
        let (id, name) = (
            package["id"].as_str().unwrap(),
            package["name"].as_str().unwrap(),
        );
        names.insert(id, name);
        let kinds = package["targets"].as_array().unwrap().iter();
        if kinds
            .flat_map(|t| t["kind"].as_array().unwrap())
            .any(|k| k == "proc-macro")
        {
            proc_macros.insert(id);
        }
    }
    let nodes: HashMap<&str, &serde_json::Value> = metadata["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| (node["id"].as_str().unwrap(), node))
        .collect();
    let root = names
        .iter()
        .find(|(_, name)| **name == "tchbook-prelude")
        .unwrap()
        .0;
    let (mut linked, mut built) = (BTreeSet::new(), BTreeSet::new());
    let mut walk = vec![(*root, false)];
    while let Some((id, for_build)) = walk.pop() {
        if !(if for_build { &mut built } else { &mut linked }).insert(id) {
            continue;
        }
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let to = dep["pkg"].as_str().unwrap();
            for kind in dep["dep_kinds"].as_array().unwrap() {
                match kind["kind"].as_str() {
                    Some("dev") => {}
                    kind => walk.push((
                        to,
                        for_build || kind == Some("build") || proc_macros.contains(to),
                    )),
                }
            }
        }
    }
    let named = |ids: &BTreeSet<&str>| ids.iter().map(|id| names[id].to_owned()).collect();
    let only_built = built.difference(&linked).copied().collect();
    let proc_macros = built.intersection(&proc_macros).copied().collect();
    (named(&linked), named(&only_built), named(&proc_macros))
}

#[test]
fn dependencies_only_a_build_runs_are_not_optimised_and_nothing_a_cell_links_is_slowed() {
    let config: toml::Table = toml::from_str(CARGO_CONFIG).unwrap();
    let packages = config["profile"]["dev"]["package"].as_table().unwrap();
    assert_eq!(packages["*"]["opt-level"].as_integer(), Some(2));
    let unoptimised: BTreeSet<String> = packages
        .iter()
        .filter(|(_, profile)| profile["opt-level"].as_integer() == Some(0))
        .map(|(name, _)| name.clone())
        .collect();
    let (linked, only_built, proc_macros) = prelude_graph();
    assert!(linked.contains("tch") && proc_macros.contains("serde_derive"));
    let slowed: Vec<_> = unoptimised.intersection(&linked).collect();
    assert!(
        slowed.is_empty(),
        "cells link these, at opt-level 0: {slowed:?}"
    );
    let stray: Vec<_> = unoptimised.difference(&only_built).collect();
    assert!(stray.is_empty(), "not in the prelude's build: {stray:?}");
    let optimised: Vec<_> = proc_macros.difference(&unoptimised).collect();
    assert!(
        optimised.is_empty(),
        "proc macros at opt-level 2: {optimised:?}"
    );
    for tool in ["syn", "quote", "proc-macro2", "cc"] {
        assert!(unoptimised.contains(tool), "{tool}");
    }
}

#[test]
fn cells_share_the_generic_code_of_tch() {
    // rustc exports a crate's generic instances for its dependents only at opt-level 0 or 1:
    // at 2 every tensor cell compiles tch's wrappers and their error handling again.
    let config: toml::Table = toml::from_str(CARGO_CONFIG).unwrap();
    let level = config["profile"]["dev"]["package"]["tch"]["opt-level"].as_integer();
    assert!(
        matches!(level, Some(0 | 1)),
        "tch at opt-level {level:?}: cells would instantiate its generics again"
    );
}

/// Set in the process [`a_copy_cut_short_leaves_nothing_a_kernel_would_take_as_built`]
/// starts and kills: the two directories to copy from and to.
const COPY_CHILD: &str = "TCHBOOK_TEST_COPY_FROM_TO";

#[test]
fn a_copy_cut_short_leaves_nothing_a_kernel_would_take_as_built() {
    if let Some(job) = std::env::var_os(COPY_CHILD) {
        let job = PathBuf::from(job);
        copy_build_dir(&job.join("template"), &job.join("slots/0")).unwrap();
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("tchbook-copy-cut-")
        .tempdir()
        .unwrap();
    let (template, slot) = (dir.path().join("template"), dir.path().join("slots/0"));
    // A built template: the ready marker and its manifest, and enough libraries that the
    // copy takes long enough to be cut short.
    let deps = template.join("target/debug/deps");
    std::fs::create_dir_all(&deps).unwrap();
    for n in 0..3000 {
        std::fs::write(deps.join(format!("lib{n}.rmeta")), vec![7u8; 32 << 10]).unwrap();
    }
    mark_ready(&template, "stamp").unwrap();
    std::fs::create_dir_all(slot.parent().unwrap()).unwrap();
    // The copy runs in a process of its own (this test, filtered to itself), killed as a
    // kernel is when it is restarted, once a tenth of the libraries are across.
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "cellbuild::cache::tests::a_copy_cut_short_leaves_nothing_a_kernel_would_take_as_built",
            "--test-threads=1",
        ])
        .env(COPY_CHILD, dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let copied = |root: &Path| {
        std::fs::read_dir(root.join("target/debug/deps")).map_or(0, |entries| entries.count())
    };
    while copied(&slot) + copied(&partial_copy(&slot)) < 300 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the copy ended before it could be cut short"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !slot.exists(),
        "a copy cut short left {} ({} of 3000 libraries, ready: {})",
        slot.display(),
        copied(&slot),
        is_ready(&slot, "stamp")
    );
    // The next copy finds the remains, and makes a whole one.
    copy_build_dir(&template, &slot).unwrap();
    assert!(is_ready(&slot, "stamp") && verify(&slot, Check::Contents).is_empty());
    assert_eq!(copied(&slot), 3000);
    assert!(!partial_copy(&slot).exists());
}

#[test]
fn the_prelude_copy_loses_files_an_earlier_kernel_wrote() {
    let dir_temp = tempfile::Builder::new()
        .prefix("tchbook-prelude-copy-")
        .tempdir()
        .unwrap();
    let dir = dir_temp.path().to_path_buf();
    // What an earlier kernel left: a module file since replaced by a directory, a file
    // in a directory that is gone, and cargo's own leftovers.
    for stale in [
        "src/runtime.rs",
        "src/gone/mod.rs",
        ".hidden",
        "target/debug/x",
    ] {
        let path = dir.join(stale);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"stale").unwrap();
    }
    write_prelude_copy(&dir).unwrap();
    for (relative, contents) in PRELUDE_FILES {
        assert_eq!(&std::fs::read(dir.join(relative)).unwrap(), contents);
    }
    assert!(!dir.join("src/runtime.rs").exists());
    assert!(!dir.join("src/gone").exists());
    assert!(dir.join(".hidden").exists() && dir.join("target/debug/x").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
