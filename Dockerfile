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
#
# Three stages: `base` (the toolchain, torch and Jupyter: what a cell needs at run time), `builder`
# (base plus this checkout, which compiles the kernel), and the image itself: base plus the
# binaries copied from the builder, so the sources never land in one of its layers.
# tests/test_dockerfile.py checks that shape, the pins below and .dockerignore.
#
# The base is pinned by digest (the tag alone can be pushed again). Its CUDA must be torch's:
# torch==2.11.0 from the default index is the CUDA 13.0 build (torch.version.cuda). To move to
# another tag, take its digest with `docker buildx imagetools inspect nvidia/cuda:TAG` and pass
# both with --build-arg CUDA_IMAGE=nvidia/cuda:TAG@sha256:DIGEST.
ARG CUDA_IMAGE=nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04@sha256:14d94b039cb94bbd5da559f303b46bc4b0d5d6c24ab1a9d7b186e566ed3400dc

FROM ${CUDA_IMAGE} AS base

ARG RUST_VERSION=1.95.0
# rustup-init by version, checked against the SHA-256 sums rustup publishes beside it
# (<archive>/<version>/<target>/rustup-init.sha256; the official rust images carry the same).
ARG RUSTUP_VERSION=1.29.0
ARG RUSTUP_SHA256_AMD64=4acc9acc76d5079515b46346a485974457b5a79893cfb01112423c89aeb5aa10
ARG RUSTUP_SHA256_ARM64=9732d6c5e2a098d3521fca8145d826ae0aaa067ef2385ead08e6feac88fa5792
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
# torch and Jupyter, curl (downloads, and the health check), tini as PID 1. Ubuntu's images own
# uid 1000 as "ubuntu": it makes way.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential ca-certificates curl git \
      pkg-config python3 python3-venv tini \
 && rm -rf /var/lib/apt/lists/* \
 && (userdel -r ubuntu 2>/dev/null || true) \
 && useradd --create-home --uid 1000 --gid 100 --shell /bin/bash jovyan \
 && mkdir -p /opt/rust /opt/venv /opt/tchbook/cache /opt/tchbook/bin \
 && chown -R 1000:100 /opt/rust /opt/venv /opt/tchbook

USER 1000:100
RUN set -eu; \
    case "$(dpkg --print-architecture)" in \
      amd64) target=x86_64-unknown-linux-gnu; sum=${RUSTUP_SHA256_AMD64} ;; \
      arm64) target=aarch64-unknown-linux-gnu; sum=${RUSTUP_SHA256_ARM64} ;; \
      *) echo "no rustup-init checksum for $(dpkg --print-architecture)" >&2; exit 1 ;; \
    esac; \
    curl --proto '=https' --tlsv1.2 -fsSL -o /tmp/rustup-init \
      "https://static.rust-lang.org/rustup/archive/${RUSTUP_VERSION}/${target}/rustup-init"; \
    echo "${sum} */tmp/rustup-init" | sha256sum -c -; \
    chmod +x /tmp/rustup-init; \
    /tmp/rustup-init -y --no-modify-path --profile minimal --default-toolchain ${RUST_VERSION} \
      --component rust-src; \
    rm /tmp/rustup-init; \
    python3 -m venv /opt/venv; \
    pip install --no-cache-dir torch==2.11.0 jupyterlab==4.6.6 jupyterhub==${JUPYTERHUB_VERSION}

# The kernel, built from this checkout; only /opt/tchbook/bin leaves this stage.
FROM base AS builder
COPY --chown=1000:100 . /tmp/tchbook-src
WORKDIR /tmp/tchbook-src
RUN LIBTORCH=$(python -c 'import torch, os; print(os.path.dirname(torch.__file__))') \
    cargo build --release --locked -p tchbook \
 && install -m 0755 target/release/tchbook /opt/tchbook/bin/tchbook \
 && install -m 0755 docker/entrypoint.sh /opt/tchbook/bin/tchbook-entrypoint \
 && install -m 0755 docker/healthcheck.sh /opt/tchbook/bin/tchbook-healthcheck

FROM base
COPY --from=builder --chown=1000:100 /opt/tchbook/bin/ /opt/tchbook/bin/
ENV PATH=/opt/tchbook/bin:${PATH}

# The kernelspec for JupyterLab in this image, and tch and the prelude compiled into the build
# cache now rather than in a pod's first cell (and the completion index). A cell's `:dep` fetches
# into /opt/rust's registry, which this fills too.
RUN tchbook install --sys-prefix

WORKDIR /home/jovyan
EXPOSE 8888
# JupyterLab and the single-user server answer on their base URL; a gateway's kernel container
# is always healthy (docker/healthcheck.sh says why). The start period covers the server's start.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 CMD ["tchbook-healthcheck"]
ENTRYPOINT ["tini", "--", "tchbook-entrypoint"]
CMD []
