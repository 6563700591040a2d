use super::linker::cell_link_arguments;
use super::*;
use crate::cellbuild::placeholder::absolute;
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
            "-Wl,--threads=1",
        ]
        .map(OsString::from)
    );
}

/// Runs `cc` with `args`, which must succeed.
fn cc(args: &[&str]) {
    let status = Command::new("cc").args(args).status().unwrap();
    assert!(status.success(), "cc {args:?}");
}

/// Compiles the C `code` into the shared library `dir/lib{name}.so`, with the linker's `extra`
/// arguments after it.
fn c_library(dir: &Path, name: &str, code: &str, extra: &[&str]) -> PathBuf {
    let source = dir.join(format!("{name}.c"));
    std::fs::write(&source, code).unwrap();
    let out = dir.join(format!("lib{name}.so"));
    let mut args = vec!["-shared", "-fPIC", "-o", out.to_str().unwrap()];
    args.push(source.to_str().unwrap());
    args.extend(extra);
    cc(&args);
    out
}

/// Compiles the C `code` into an archive at `rlib`, as a dependency's rlib holds its objects.
fn c_archive(rlib: &Path, code: &str) {
    let source = rlib.with_extension("c");
    std::fs::write(&source, code).unwrap();
    let object = rlib.with_extension("o");
    cc(&[
        "-c",
        "-fPIC",
        "-o",
        object.to_str().unwrap(),
        source.to_str().unwrap(),
    ]);
    let status = Command::new("ar")
        .arg("crs")
        .arg(rlib)
        .arg(&object)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A fake libtorch (`torch/lib/libtorch_cpu.so`, a real shared library defining what the
/// "rlib" calls) and a dependency "rlib" (`target/deps/libdep-1.rlib`, an archive with a function
/// nothing in the cell calls yet) under `dir`; returns the rlib and libtorch's directory.
fn fake_dependencies(dir: &Path) -> (PathBuf, PathBuf) {
    let deps = dir.join("target").join("deps");
    let torch = dir.join("torch").join("lib");
    std::fs::create_dir_all(&deps).unwrap();
    std::fs::create_dir_all(&torch).unwrap();
    c_library(
        &torch,
        "torch_cpu",
        "int torch_answer(void) { return 42; }\n",
        &[],
    );
    let rlib = deps.join("libdep-1.rlib");
    c_archive(
        &rlib,
        "int torch_answer(void);\nint dep_unused(void) { return torch_answer(); }\n",
    );
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
fn the_plan_leaves_out_of_the_cells_link_what_the_library_loads_but_not_the_c_runtime() {
    let dir_temp = tempfile::Builder::new()
        .prefix("tchbook-link-loaded-")
        .tempdir()
        .unwrap();
    let dir = dir_temp.path();
    let deps = dir.join("target").join("deps");
    let torch = dir.join("torch").join("lib");
    let runtime = dir.join("runtime");
    for each in [&deps, &torch, &runtime] {
        std::fs::create_dir_all(each).unwrap();
    }
    // Beside libtorch, on the search path as the system's libraries are: the dependencies' C++
    // runtime (as libstdc++, which the library needs) and libtorch's OpenMP (as libgomp, which
    // libtorch needs, not the library).
    c_library(
        &runtime,
        "cxxrt",
        "int cxx_answer(void) { return 1; }\n",
        &[],
    );
    c_library(
        &runtime,
        "ompx",
        "int omp_answer(void) { return 2; }\n",
        &[],
    );
    let runtime_search = format!("-L{}", runtime.display());
    c_library(
        &torch,
        "torch_cpu",
        "int omp_answer(void);\nint torch_answer(void) { return omp_answer(); }\n",
        &[&runtime_search, "-lompx"],
    );
    // A user's system library nothing in the dependencies calls: the library does not load it.
    c_library(
        &runtime,
        "unused",
        "int unused_answer(void) { return 3; }\n",
        &[],
    );
    let rlib = deps.join("libdep-1.rlib");
    c_archive(
        &rlib,
        "int torch_answer(void);\nint cxx_answer(void);\n\
         int dep_answer(void) { return torch_answer() + cxx_answer(); }\n",
    );
    let line = format!(
        r#""cc" "{deps}/ctx.x.rcgu.o" "{rlib}" "-Wl,--as-needed" "-lcxxrt" "-ltorch_cpu" "-lompx" "-lunused" "-lm" "-lc" "-L" "{torch}" "-L" "{runtime}" "-shared" "-o" "{deps}/libctx.so""#,
        deps = deps.display(),
        rlib = rlib.display(),
        torch = torch.display(),
        runtime = runtime.display(),
    );
    let LinkPlan::Shared { dropped, .. } = plan(&line, dir).unwrap() else {
        panic!("no shared plan");
    };
    assert_eq!(dropped, ["torch_cpu", "cxxrt", "ompx"]);
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
