# The tchbook kernel image: one image for an Enterprise Gateway / gateway_provisioners kernel pod
# or container and for a JupyterHub single-user server (README, "Remote GPU kernels").
#
#   docker build -t registry.example.com/tchbook:0.1.0 .
#
# What it holds: a CUDA runtime base (the GPU driver comes from the node, through the NVIDIA
# container toolkit), the Rust toolchain that compiles every cell, torch==2.11.0 (libtorch for
# tch, with its CUDA libraries), JupyterLab and JupyterHub's single-user server, the tchbook
# binary, and tchbook's build cache with tch and the prelude compiled, so a pod's first cell is as
# fast as on a warm install. It runs as jovyan, uid 1000, gid 100 (the Jupyter images' user).
# The cache lives outside the home directory (/opt/tchbook/cache), which JupyterHub usually
# mounts a volume over. The entry point (docker/entrypoint.sh, tested by
# tests/test_remote_gateway.py) starts `tchbook launch` when a gateway starts the image, and
# otherwise the command it is given (jupyterhub-singleuser) or JupyterLab.
ARG CUDA_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04
FROM ${CUDA_IMAGE}

ARG RUST_VERSION=1.95.0
# The single-user server should match your hub's JupyterHub release.
ARG JUPYTERHUB_VERSION=5.5.4
ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8 \
    RUSTUP_HOME=/opt/rust \
    CARGO_HOME=/opt/rust \
    TCHBOOK_CACHE_DIR=/opt/tchbook/cache \
    TCHBOOK_VENV=/opt/venv \
    PATH=/opt/venv/bin:/opt/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# A C/C++ toolchain (cells link with cc; torch-sys and the prelude's shim compile C++), Python for
# torch and Jupyter, tini as PID 1. Ubuntu's images own uid 1000 as "ubuntu": it makes way.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential ca-certificates curl git \
      pkg-config python3 python3-venv tini \
 && rm -rf /var/lib/apt/lists/* \
 && (userdel -r ubuntu 2>/dev/null || true) \
 && useradd --create-home --uid 1000 --gid 100 --shell /bin/bash jovyan \
 && mkdir -p /opt/rust /opt/venv /opt/tchbook/cache \
 && chown -R 1000:100 /opt/rust /opt/venv /opt/tchbook

USER 1000:100
RUN curl -sSf https://sh.rustup.rs | sh -s -- -y --no-modify-path --profile minimal \
      --default-toolchain ${RUST_VERSION} --component rust-src \
 && python3 -m venv /opt/venv \
 && pip install --no-cache-dir torch==2.11.0 jupyterlab==4.6.6 jupyterhub==${JUPYTERHUB_VERSION}

# The binary, built from this checkout and the sources then dropped (the registry cache stays:
# a cell's `:dep` uses it).
COPY --chown=1000:100 . /tmp/tchbook-src
RUN cd /tmp/tchbook-src \
 && LIBTORCH=$(python -c 'import torch, os; print(os.path.dirname(torch.__file__))') \
    cargo build --release --locked -p tchbook \
 && mkdir -p /opt/tchbook/bin \
 && install -m 0755 target/release/tchbook /opt/tchbook/bin/tchbook \
 && install -m 0755 docker/entrypoint.sh /opt/tchbook/bin/tchbook-entrypoint \
 && cd / && rm -rf /tmp/tchbook-src
ENV PATH=/opt/tchbook/bin:${PATH}

# The kernelspec for JupyterLab in this image, and tch and the prelude compiled into the build
# cache now rather than in a pod's first cell (and the completion index).
RUN tchbook install --sys-prefix

WORKDIR /home/jovyan
EXPOSE 8888
ENTRYPOINT ["tini", "--", "tchbook-entrypoint"]
CMD []
