//! A kernel started in a folder that holds what a cloned repository or a shared drive could: a
//! library named like one the kernel's processes load, an `evcxr.toml` with start-up code and a
//! build directory inside the folder, a `.cargo/config.toml` with a rustc wrapper, and a
//! `rust-toolchain.toml` naming a toolchain of the folder's own. Each of them, if obeyed, writes
//! a line to the folder's `ran` file; none may.

use crate::support::Kernel;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A folder holding every planted file, each of which appends its name to `ran` when run.
fn plant(folder: &Path) {
    let ran = folder.join("ran");
    let ran = ran.display();
    // A library whose constructor runs the moment the loader maps it.
    let source = folder.join("planted.c");
    std::fs::write(
        &source,
        format!(
            "#include <stdio.h>\n\
             __attribute__((constructor)) static void planted(void) {{\n\
               FILE *f = fopen(\"{ran}\", \"a\");\n\
               if (f) {{ fputs(\"libcuda.so.1\\n\", f); fclose(f); }}\n\
             }}\n"
        ),
    )
    .unwrap();
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(folder.join("libcuda.so.1"))
        .arg(&source)
        .status()
        .expect("cc, to build the planted library");
    assert!(built.success());
    // evcxr's configuration: code run at start, and a build directory in the folder.
    std::fs::write(
        folder.join("evcxr.toml"),
        format!(
            "[evcxr]\n\
             prelude = '''std::fs::write(\"{ran}\", \"evcxr.toml\\n\").unwrap();'''\n\
             tmpdir = \"{}\"\n",
            folder.join("evcxr-build").display()
        ),
    )
    .unwrap();
    // cargo's configuration, obeyed by any cargo that runs in the folder.
    let wrapper = script(folder, "wrapper", ".cargo/config.toml", "\"$@\"");
    std::fs::create_dir_all(folder.join(".cargo")).unwrap();
    std::fs::write(
        folder.join(".cargo/config.toml"),
        format!("[build]\nrustc-wrapper = \"{}\"\n", wrapper.display()),
    )
    .unwrap();
    // rustup runs the `rustc` and `cargo` of a toolchain path named in the folder.
    let toolchain = folder.join("toolchain");
    for tool in ["rustc", "cargo"] {
        let real = Command::new("rustup").args(["which", tool]).output();
        let real = real.map_or_else(
            |_| tool.to_owned(),
            |o| String::from_utf8_lossy(&o.stdout).trim().to_owned(),
        );
        script(
            &toolchain.join("bin"),
            tool,
            "rust-toolchain.toml",
            &format!("{real} \"$@\""),
        );
    }
    std::fs::write(
        folder.join("rust-toolchain.toml"),
        format!("[toolchain]\npath = \"{}\"\n", toolchain.display()),
    )
    .unwrap();
}

/// An executable shell script `dir/name` that notes `what` in the folder's `ran`, then runs
/// `then`.
fn script(dir: &Path, name: &str, what: &str, then: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let ran = dir
        .ancestors()
        .find(|d| d.join("planted.c").exists())
        .unwrap()
        .join("ran");
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\necho {what} >> '{}'\nexec {then}\n",
            ran.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_in_the_notebook_folder_runs_in_the_kernel() {
    let folder_temp = tempfile::Builder::new()
        .prefix("tchbook-hostile-")
        .tempdir()
        .unwrap();
    let folder = folder_temp.path().to_path_buf();
    plant(&folder);
    // An empty loader path, as where none is set: the evaluation process's own path used to
    // end in ':' then, which the loader reads as the current directory.
    let mut kernel = Kernel::start_in(&folder, &[("LD_LIBRARY_PATH", "")]).await;
    kernel.run_ok("let kept = 41;").await;
    let tch = kernel
        .run_ok("Tensor::ones([3], (Kind::Float, Device::Cpu)).sum(Kind::Float).double_value(&[]) + kept as f64")
        .await;
    assert_eq!(tch.result().as_deref(), Some("44.0"));
    // Relative paths are still the notebook's: the cell runs in its folder.
    let here = kernel
        .run_ok("std::path::Path::new(\"evcxr.toml\").exists()")
        .await;
    assert_eq!(here.result().as_deref(), Some("true"));
    let ran = std::fs::read_to_string(folder.join("ran")).unwrap_or_default();
    assert!(
        ran.is_empty(),
        "planted files ran in the kernel: {ran}\nkernel log:\n{}",
        kernel.log()
    );
    assert!(
        !folder.join("evcxr-build").exists(),
        "evcxr.toml's tmpdir was obeyed"
    );
    drop(kernel);
    let _ = std::fs::remove_dir_all(&folder);
}
