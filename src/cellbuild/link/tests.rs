use super::linker::cell_link_arguments;
use super::*;
use crate::cellbuild::cargo_front::absolute;
use std::ffi::OsString;

#[test]
fn the_printed_command_is_read_without_its_environment() {
    let line = r#"LC_ALL="C" PATH="/a b:/c" "cc" "-Wl,--as-needed" "-L" "/x/lib" "-lsay \"hi\"" "-shared""#;
    assert_eq!(
        linker_words(line),
        [
            "cc",
            "-Wl,--as-needed",
            "-L",
            "/x/lib",
            "-lsay \"hi\"",
            "-shared"
        ]
    );
}

#[test]
fn a_cell_links_the_library_in_place_of_the_rlibs_and_without_libtorch() {
    let args = [
        "-Wl,--version-script=/tmp/rustcX/list",
        "-Wl,--no-undefined-version",
        "/b/target/deps/ctx.a.rcgu.o",
        "-Wl,-Bstatic",
        "/b/target/deps/libtch-1.rlib",
        "/b/target/deps/libprelude-2.rlib",
        "/rust/lib/libcompiler_builtins-3.rlib",
        "-lstdc++",
        "-ltorch_cpu",
        "-lc10",
        "-lc",
        "-fuse-ld=lld",
    ]
    .map(OsString::from)
    .to_vec();
    let out = cell_link_arguments(
        args,
        "/b/target/tchbook-link/libtchbook-deps-1.so",
        &[
            "/b/target/deps/libtch-1.rlib".into(),
            "/b/target/deps/libprelude-2.rlib".into(),
        ],
        &["torch_cpu".into(), "c10".into()],
    );
    assert_eq!(
        out,
        [
            "-Wl,--version-script=/tmp/rustcX/list",
            "-Wl,--undefined-version",
            "/b/target/deps/ctx.a.rcgu.o",
            "-Wl,-Bstatic",
            "-Wl,--push-state,-Bdynamic",
            "/b/target/tchbook-link/libtchbook-deps-1.so",
            "-Wl,--pop-state",
            "/rust/lib/libcompiler_builtins-3.rlib",
            "-lstdc++",
            "-lc",
            "-fuse-ld=lld",
            "-Wl,-rpath,/b/target/tchbook-link",
            "-Wl,-z,noseparate-code",
            "-Wl,-z,norelro",
            "-Wl,--no-rosegment",
        ]
        .map(OsString::from)
    );
}

/// A fake libtorch (`torch/lib/libtorch_cpu.so`, a real shared library defining what the
/// "rlib" calls) and a dependency "rlib" (`target/deps/libdep-1.rlib`, an archive with a function
/// nothing in the cell calls yet) under `dir`; returns the rlib and libtorch's directory.
fn fake_dependencies(dir: &Path) -> (PathBuf, PathBuf) {
    let deps = dir.join("target").join("deps");
    let torch = dir.join("torch").join("lib");
    std::fs::create_dir_all(&deps).unwrap();
    std::fs::create_dir_all(&torch).unwrap();
    let cc = |args: &[&str]| {
        let status = Command::new("cc").args(args).status().unwrap();
        assert!(status.success(), "cc {args:?}");
    };
    // libtorch_cpu: a real shared library defining what the "rlib" calls.
    let torch_c = dir.join("torch.c");
    std::fs::write(&torch_c, "int torch_answer(void) { return 42; }\n").unwrap();
    let libtorch = torch.join(LIBTORCH_MARKER);
    cc(&[
        "-shared",
        "-fPIC",
        "-o",
        libtorch.to_str().unwrap(),
        torch_c.to_str().unwrap(),
    ]);
    // An "rlib": an archive with a function nothing in the cell calls yet.
    let dep_c = dir.join("dep.c");
    std::fs::write(
        &dep_c,
        "int torch_answer(void);\nint dep_unused(void) { return torch_answer(); }\n",
    )
    .unwrap();
    let dep_o = dir.join("dep.o");
    cc(&[
        "-c",
        "-fPIC",
        "-o",
        dep_o.to_str().unwrap(),
        dep_c.to_str().unwrap(),
    ]);
    let rlib = deps.join("libdep-1.rlib");
    let status = Command::new("ar")
        .arg("crs")
        .arg(&rlib)
        .arg(&dep_o)
        .status()
        .unwrap();
    assert!(status.success());
    (rlib, torch)
}

#[test]
fn the_library_holds_the_rlibs_whole_and_the_plan_names_libtorch() {
    let dir_temp = tempfile::Builder::new()
        .prefix("tchbook-link-")
        .tempdir()
        .unwrap();
    let dir = dir_temp.path().to_path_buf();
    let (rlib, torch) = fake_dependencies(&dir);
    let deps = dir.join("target").join("deps");
    let line = format!(
        r#"LC_ALL="C" "cc" "{}/ctx.x.rcgu.o" "{}" "-L" "{}" "-ltorch_cpu" "-lm" "-L" "/gone/rustcX/raw-dylibs" "-shared" "-o" "{}/libctx.so""#,
        deps.display(),
        rlib.display(),
        torch.display(),
        deps.display()
    );
    let plan = plan(&line, &dir).unwrap();
    let LinkPlan::Shared {
        library,
        replaced,
        dropped,
        linker,
    } = plan.clone()
    else {
        panic!("no shared plan: {plan:?}");
    };
    assert_eq!(replaced, ["{tchbook-build-dir}/target/deps/libdep-1.rlib"]);
    assert_eq!(dropped, ["torch_cpu"]);
    assert_eq!(linker, "cc");
    let library = absolute(&library, &dir);
    // Whole: the unused function is there, and libtorch is needed.
    let symbols = Command::new("nm").arg("-D").arg(&library).output().unwrap();
    let symbols = String::from_utf8_lossy(&symbols.stdout);
    assert!(symbols.contains("T dep_unused"), "{symbols}");
    let needed = Command::new("readelf")
        .arg("-d")
        .arg(&library)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&needed.stdout).contains("[libtorch_cpu.so]"));
    assert!(plan.usable(&dir).is_some());
    std::fs::remove_file(&library).unwrap();
    assert!(
        plan.usable(&dir).is_none(),
        "a plan whose library is gone must not be used"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn libraries_no_record_names_are_removed() {
    let dir_temp = tempfile::Builder::new()
        .prefix("tchbook-link-gc-")
        .tempdir()
        .unwrap();
    let dir = dir_temp.path().to_path_buf();
    let libraries = dir.join(LIBRARY_DIR);
    let records = dir.join("target").join("tchbook-replay");
    std::fs::create_dir_all(&libraries).unwrap();
    std::fs::create_dir_all(&records).unwrap();
    for name in ["libtchbook-deps-1.so", "libtchbook-deps-2.so"] {
        std::fs::write(libraries.join(name), b"").unwrap();
    }
    std::fs::write(
        records.join("1.json"),
        r#"{"link_plan":{"library":"{tchbook-build-dir}/target/tchbook-link/libtchbook-deps-1.so"}}"#,
    )
    .unwrap();
    remove_unused_libraries(&dir, &records);
    assert!(libraries.join("libtchbook-deps-1.so").is_file());
    assert!(!libraries.join("libtchbook-deps-2.so").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_link_without_dependencies_keeps_rustcs_own_plan() {
    let line = r#""cc" "a.o" "-lm" "-L" "/nonexistent" "-shared""#;
    assert_eq!(
        plan(line, Path::new("/nonexistent")).unwrap(),
        LinkPlan::Full
    );
}
