use tchbook_prelude::prelude::*;

#[test]
fn best_device_is_cuda_when_present_and_cpu_here_otherwise() {
    let d = best_device();
    if cuda::is_available() {
        assert_eq!(d, Device::Cuda(0));
    } else if !tch::utils::has_mps() {
        assert_eq!(d, Device::Cpu);
    }
    assert_eq!(Tensor::ones([2], (Kind::Float, d)).device(), d);
}

#[test]
fn device_specs_parse_like_torch_device() {
    assert_eq!(device("cpu"), Device::Cpu);
    assert_eq!(device("cuda"), Device::Cuda(0));
    assert_eq!(device("cuda:3"), Device::Cuda(3));
    assert_eq!(device("mps"), Device::Mps);
    assert!(
        f_device("cuda:x")
            .unwrap_err()
            .to_string()
            .contains("cuda:x")
    );
    assert!(f_device("tpu").is_err());
    assert_eq!(device_name(Device::Cuda(1)), "cuda:1");
    assert_eq!(device_name(Device::Cpu), "cpu");
}

#[test]
fn moving_to_cuda_without_cuda_is_an_error_not_an_abort() {
    if cuda::is_available() {
        return;
    }
    let t = Tensor::ones([2], (Kind::Float, Device::Cpu));
    let e = t.f_cuda().unwrap_err();
    assert!(e.to_string().contains("CUDA is not available"), "{e}");
    let mut vs = nn::VarStore::new(Device::Cpu);
    let _m = TestModel::new(&vs.root());
    assert!(vs.f_cuda().is_err());
    assert!(!vs.is_cuda());
    assert!(!t.is_cuda());
}

#[test]
fn a_cuda_request_without_a_driver_says_there_is_no_driver() {
    // What libtorch answers when its CUDA backend is not loaded, as the prelude leaves it on a
    // machine without a driver (shortened; the real one lists every dispatch key).
    let unloaded = tch::TchError::Torch(
        "Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend. This could \
         be because the operator doesn't exist for this backend.\n\nCPU: registered at \
         RegisterCPU_2.cpp:2480 [kernel]\nException raised from reportError at \
         OperatorEntry.cpp:640"
            .into(),
    );
    let text = short_error(&unloaded);
    if tchbook_prelude::device::nvidia_driver_present() {
        // With a driver the backend is loaded, and such a message is about a real operator.
        assert!(
            text.starts_with("Could not run 'aten::empty_strided'"),
            "{text}"
        );
    } else {
        assert_eq!(
            text,
            "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and \
             installed a driver from http://www.nvidia.com/Download/index.aspx"
        );
    }
}

#[test]
fn libtorch_errors_are_one_line_through_the_fallible_twins() {
    let a = Tensor::ones([2], (Kind::Float, Device::Cpu));
    let b = Tensor::ones([3], (Kind::Float, Device::Cpu));
    let e = catch_torch_error(|| &a + &b).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("must match the size of tensor b"), "{text}");
    assert!(
        !text.contains('\n') && !text.contains("Exception raised from"),
        "{text}"
    );
    let short = short_error(&a.f_add(&b).unwrap_err());
    assert_eq!(short, text);
    // Asking for a GPU that is not there is a message too, not a crash.
    if !cuda::is_available() {
        let e = a.f_to_device(Device::Cuda(0)).unwrap_err();
        let text = short_error(&e);
        assert!(
            !text.contains('\n') && !text.contains("Exception raised from") && !text.is_empty(),
            "{text}"
        );
        println!("no-GPU message: {text}");
    }
    // The caller's panic hook is back in place afterwards.
    assert!(catch_torch_error(|| 1 + 1).is_ok());
}

#[test]
fn a_model_forward_on_the_wrong_input_is_caught() {
    let vs = nn::VarStore::new(Device::Cpu);
    let network = Network::new(&vs.root());
    let sample = Tensor::ones([1, 3, 28, 28], (Kind::Float, Device::Cpu)); // 3 channels, not 1
    let e = catch_torch_error(|| network.forward(&sample)).unwrap_err();
    assert!(e.to_string().contains("channels"), "{e}");
}

#[test]
fn named_parameters_have_pytorch_names_in_creation_order() {
    let vs = nn::VarStore::new(Device::Cpu);
    let _n = Network::new(&vs.root());
    let params = named_parameters(&vs);
    let got: Vec<(String, Vec<i64>, String)> = params
        .iter()
        .map(|(n, t)| (n.to_string(), t.size(), device_name(t.device())))
        .collect();
    let want = [
        ("conv1.weight", vec![6, 1, 5, 5]),
        ("conv1.bias", vec![6]),
        ("conv2.weight", vec![12, 6, 5, 5]),
        ("conv2.bias", vec![12]),
        ("fc1.weight", vec![120, 192]),
        ("fc1.bias", vec![120]),
        ("fc2.weight", vec![60, 120]),
        ("fc2.bias", vec![60]),
        ("out.weight", vec![10, 60]),
        ("out.bias", vec![10]),
    ];
    assert_eq!(got.len(), want.len());
    for ((n, s, d), (wn, ws)) in got.iter().zip(want.iter()) {
        assert_eq!((n.as_str(), s), (*wn, ws));
        assert_eq!(d, "cpu");
    }
    let b = params.bundle();
    assert!(b.html.unwrap().contains("fc1.weight"));
    assert_eq!(
        b.data.unwrap().1["parameters"][4]["shape"],
        serde_json::json!([120, 192])
    );
}

#[test]
fn device_card_shows_cpu_ram_versions_and_says_when_cuda_is_absent() {
    let card = device_card();
    let b = card.bundle();
    let json = b.data.unwrap().1;
    assert!(b.text.contains("CPU") && b.text.contains("RAM"));
    assert!(json["cpu"]["cores"].as_u64().unwrap() >= 1);
    assert!(json["cpu"]["ram_bytes"].as_u64().unwrap() > 0);
    assert_eq!(json["torch_version"], "2.11.0");
    assert_eq!(json["cuda_available"], cuda::is_available());
    if !cuda::is_available() {
        assert!(b.text.contains("no CUDA device is present"));
        assert_eq!(json["devices"][0]["device"], "cpu");
    }
    assert!(
        b.html
            .unwrap()
            .contains(&card.cpu_model.replace('&', "&amp;"))
    );
}

#[test]
fn cuda_queries_do_not_panic_without_cuda() {
    let _ = cuda::current_device();
    let name = cuda::get_device_name(0);
    let n = cuda::device_count();
    if n == 0 {
        assert_eq!(name, "no CUDA device");
        assert!(cuda::get_device_properties(0).is_none());
        assert!(cuda::get_device_capability(0).is_none());
    }
    assert!(cuda::get_device_properties(n + 5).is_none());
    cuda::synchronize(0);
}

#[test]
fn gpu_check_fails_where_a_driver_is_present_but_cuda_cannot_run() {
    // A GPU machine whose CUDA is broken must not pass the GPU check by skipping every CUDA check.
    // A stand-in libcuda.so.1 with no symbols makes the prelude see a driver, and the CUDA runtime
    // then refuses it: the card and the check must say what the runtime answered.
    let dir = crate::scratch("broken-driver");
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-x", "c", "/dev/null", "-o"])
        .arg(dir.join("libcuda.so.1"))
        .status()
        .expect("cc (the C compiler Rust links with) runs");
    assert!(status.success());
    let example = crate::example("gpu_check");
    let path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let out = std::process::Command::new(&example)
        .env("LD_LIBRARY_PATH", format!("{}:{path}", dir.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "gpu_check passed:\n{stdout}");
    assert!(
        stdout.contains("[FAIL] CUDA is available wherever an NVIDIA driver is"),
        "{stdout}"
    );
    let card = stdout
        .lines()
        .find(|l| l.starts_with("CUDA "))
        .unwrap_or_else(|| panic!("the device card has no CUDA row:\n{stdout}"));
    assert!(
        card.contains("an NVIDIA driver is present, but libtorch"),
        "{card}"
    );
}
