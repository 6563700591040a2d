use tchbook_prelude::prelude::*;

#[test]
fn memory_statistics_are_zero_without_cuda_and_never_panic() {
    if cuda::is_available() {
        return;
    }
    assert_eq!(cuda::memory_allocated(0), 0);
    assert_eq!(cuda::memory_reserved(Device::Cuda(0)), 0);
    assert_eq!(cuda::memory_cached(0usize), 0);
    assert_eq!(cuda::max_memory_allocated(0), 0);
    assert_eq!(cuda::max_memory_reserved(0), 0);
    cuda::reset_peak_memory_stats(0);
    cuda::empty_cache();
    assert_eq!(
        cuda::f_memory_stats(0).unwrap_err(),
        cuda::MemoryError::NoCuda
    );
    assert!(cuda::f_empty_cache().is_err());
    assert_eq!(cuda::memory_allocated(Device::Cpu), 0);
    assert_eq!(cuda::memory_allocated(-1), 0);
}

#[test]
fn mem_get_info_falls_back_to_system_ram_without_cuda() {
    if cuda::is_available() {
        return;
    }
    let (free, total) = cuda::mem_get_info(0);
    assert!(total > 0 && free <= total, "{free} {total}");
}

#[test]
fn memory_summary_without_cuda_reports_process_and_system_ram() {
    let summary = cuda::memory_summary();
    let b = summary.bundle();
    let json = b.data.unwrap().1;
    assert_eq!(json["cuda"], cuda::is_available());
    let cpu = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["device"] == "cpu")
        .unwrap();
    assert!(cpu["process_rss"].as_u64().unwrap() > 0);
    assert!(cpu["total"].as_u64().unwrap() > 0);
    if !cuda::is_available() {
        assert!(b.text.contains("No CUDA device is present"), "{}", b.text);
        assert!(b.html.unwrap().contains("No CUDA device is present"));
    }
    assert!(summary.process_rss > 0 && summary.ram_total > 0);
}

#[test]
fn the_shim_was_built_against_libtorch_2_11() {
    assert_eq!(cuda::versions().torch, "2.11.0");
}

#[test]
fn the_shim_finds_the_cuda_allocator_exactly_when_libtorch_has_cuda() {
    let lib =
        std::path::PathBuf::from(std::env::var("LIBTORCH").expect("LIBTORCH is set for the tests"));
    let has_cuda = lib.join("lib/libc10_cuda.so").exists();
    let state = cuda::allocator_state();
    // The pip torch is a CUDA build, and this test binary links libtorch_cuda (build.rs): its
    // allocator registers even without a GPU.
    assert_eq!(state != cuda::AllocatorState::Absent, has_cuda, "{state:?}");
    if !cuda::is_available() {
        assert_ne!(state, cuda::AllocatorState::Initialized);
    }
}

#[test]
fn without_an_nvidia_driver_a_kernel_process_maps_no_libtorch_cuda() {
    // This test binary links libtorch_cuda itself (build.rs), so it asks the startup_rss example,
    // which starts the way a kernel's evaluation process does (attach, best_device, one op).
    // `cargo test` builds the examples next to the test binaries.
    let example = crate::example("startup_rss");
    let out = std::process::Command::new(&example).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = String::from_utf8(out.stdout).unwrap();
    println!("{out}");
    let mapped = out
        .lines()
        .find_map(|l| l.strip_prefix("CUDA libraries mapped: "))
        .expect("the example lists the CUDA libraries it maps");
    if tchbook_prelude::device::nvidia_driver_present() {
        assert!(mapped.contains("libtorch_cuda.so"), "{out}");
    } else {
        assert!(!mapped.contains("libtorch_cuda.so"), "{out}");
        assert!(out.contains("best_device: cpu"), "{out}");
    }
}
