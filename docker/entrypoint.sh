#!/bin/sh
# The tchbook image's entry point (under tini, which reaps and forwards signals). One image, three
# ways it is started:
#  - by a gateway's container launcher (Enterprise Gateway, gateway_provisioners: a kernel pod or
#    container): no command, and the kernel's KERNEL_ID, RESPONSE_ADDRESS, PUBLIC_KEY and
#    PORT_RANGE in the environment -> `tchbook launch`, which reads them, sends the gateway the
#    connection information and runs the kernel;
#  - by JupyterHub (KubeSpawner, DockerSpawner): its command (jupyterhub-singleuser) is run as
#    given, or, when the spawner gives none, jupyterhub-singleuser itself;
#  - by hand with no command: JupyterLab on port 8888.
set -eu

if [ "$#" -gt 0 ]; then
    exec "$@"
fi
if [ -n "${KERNEL_ID:-}" ] && [ -n "${RESPONSE_ADDRESS:-}" ]; then
    # The gateway passes the kernel's port range only when one is configured.
    exec tchbook launch
fi
if [ -n "${JUPYTERHUB_API_TOKEN:-}" ]; then
    exec jupyterhub-singleuser
fi
exec jupyter lab --ip=0.0.0.0 --port=8888 --no-browser
