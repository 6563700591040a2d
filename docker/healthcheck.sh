#!/bin/sh
# The tchbook image's HEALTHCHECK (Dockerfile). Healthy means that what docker/entrypoint.sh
# started is serving:
#  - a gateway's kernel container (KERNEL_ID and RESPONSE_ADDRESS set, as the entry point reads
#    them): there is no HTTP server to ask, and the gateway watches the kernel itself (its
#    communication port); the container ends when the kernel does. Always healthy, so that a
#    runtime which acts on health never restarts a kernel that is busy training;
#  - JupyterLab or JupyterHub's single-user server: the server this user runs, as
#    `jupyter server list` finds it (its port and base URL: a hub serves under /user/NAME/),
#    answers GET <base_url>api (Jupyter Server's version, served without a token) within 5 s.
set -eu

if [ -n "${KERNEL_ID:-}" ] && [ -n "${RESPONSE_ADDRESS:-}" ]; then
    exit 0
fi
urls=$(jupyter server list --jsonlist | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    scheme = "https" if s.get("secure") else "http"
    print("{}://127.0.0.1:{}{}api".format(scheme, s["port"], s["base_url"]))')
if [ -z "$urls" ]; then
    echo "no Jupyter server is running" >&2
    exit 1
fi
for url in $urls; do
    # --insecure: a hub's internal TLS certificate names the pod, not 127.0.0.1.
    curl --fail --silent --show-error --insecure --max-time 5 --output /dev/null "$url"
done
