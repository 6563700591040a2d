# A JupyterHub profile for the tchbook image on Kubernetes (KubeSpawner): each user who picks it
# gets a single-user server in this image on a node with one NVIDIA GPU, the "Rust (tchbook)"
# kernel already installed and its build cache already built. Add it to your jupyterhub_config.py
# (or, with the zero-to-jupyterhub Helm chart, to hub.extraConfig) and set the image to the one
# you pushed. tests/test_remote_gateway.py loads this file to check what it asks for.
c = get_config()  # noqa: F821  (JupyterHub provides get_config when it loads this file)

TCHBOOK_IMAGE = "registry.example.com/tchbook:0.1.0"

# The image's user (jovyan, 1000:100); the build cache is in /opt/tchbook, so a volume mounted
# over /home/jovyan does not hide it.
TCHBOOK_SERVER = {
    "image": TCHBOOK_IMAGE,
    "uid": 1000,
    "gid": 100,
    "fs_gid": 100,
    "cmd": ["jupyterhub-singleuser"],
}

c.KubeSpawner.profile_list = [
    {
        "display_name": "Rust (tchbook) on one GPU",
        "description": "tch/PyTorch notebooks in Rust; one NVIDIA GPU.",
        "kubespawner_override": {
            **TCHBOOK_SERVER,
            "extra_resource_guarantees": {"nvidia.com/gpu": "1"},
            "extra_resource_limits": {"nvidia.com/gpu": "1"},
            # Compiling cells wants cores and memory beyond a notebook's usual share.
            "cpu_guarantee": 2,
            "mem_guarantee": "8G",
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
        },
    },
    {
        "display_name": "Rust (tchbook), CPU only",
        "kubespawner_override": dict(TCHBOOK_SERVER),
    },
]
