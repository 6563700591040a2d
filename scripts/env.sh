# Source this file (`source scripts/env.sh`): it makes, once, the Python environment tchbook builds
# and runs with, and exports what the build and the kernel need. Safe to source again; it only
# reinstalls when scripts/requirements.txt changes.
#
#   TCHBOOK_VENV   the virtual environment (default ~/.cache/tchbook/venv). It holds libtorch (the
#                  torch==2.11.0 wheel, the version tch 0.24 binds) and the Jupyter tools.
#   LIBTORCH       exported as the wheel's torch/ folder, which has lib/ and include/.

_tchbook_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export TCHBOOK_VENV=${TCHBOOK_VENV:-$HOME/.cache/tchbook/venv}

_tchbook_python=${TCHBOOK_BASE_PYTHON:-python3}
if [ ! -x "$TCHBOOK_VENV/bin/python" ]; then
  echo "tchbook: creating the Python environment in $TCHBOOK_VENV" >&2
  "$_tchbook_python" -m venv "$TCHBOOK_VENV" || return 1 2>/dev/null || exit 1
fi

# The stamp records which requirements the venv holds, so a second run costs nothing.
_tchbook_req="$_tchbook_root/scripts/requirements.txt"
_tchbook_want=$(sha256sum "$_tchbook_req" | cut -d' ' -f1)
if [ "$(cat "$TCHBOOK_VENV/.tchbook-requirements" 2>/dev/null)" != "$_tchbook_want" ]; then
  echo "tchbook: installing $_tchbook_req into $TCHBOOK_VENV (torch is about 4.6 GB; a minute or two)" >&2
  # --no-compile: Python compiles a module when it is first imported instead; pip compiling all
  # of torch's and Jupyter's files up front took 50 of the 74 s this install took on two cores.
  "$TCHBOOK_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile \
    -r "$_tchbook_req" \
    || { echo "tchbook: pip install failed; see the messages above" >&2; return 1 2>/dev/null || exit 1; }
  echo "$_tchbook_want" > "$TCHBOOK_VENV/.tchbook-requirements"
fi

# Completion (rust-analyzer, and the index `tchbook install` makes with it) reads std's sources.
if command -v rustup >/dev/null && ! [ -d "$(rustc --print sysroot 2>/dev/null)/lib/rustlib/src/rust/library" ]; then
  echo "tchbook: adding the rust-src component (std's sources, for completion)" >&2
  rustup component add rust-src >&2 || echo "tchbook: could not add rust-src; std completions will be missing" >&2
fi

_tchbook_site=$("$TCHBOOK_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
export LIBTORCH="$_tchbook_site/torch"
# libtorch's lib/ must be on the loader path of every process that loads it: the prelude's tests,
# the benchmarks, and the kernel's evaluation process (the kernelspec carries it there too).
case ":${LD_LIBRARY_PATH:-}:" in
  *":$LIBTORCH/lib:"*) ;;
  *) export LD_LIBRARY_PATH="$LIBTORCH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
esac
export PATH="$TCHBOOK_VENV/bin:$PATH"
export TCHBOOK_PYTHON="$TCHBOOK_VENV/bin/python"

# The JupyterLab extension the wheel carries (the GPU panel): built once, and again when its
# sources change; a second run costs a hash of them.
"$_tchbook_root/scripts/build-labextension" \
  || echo "tchbook: the JupyterLab extension is not built (above); the GPU panel will be missing" >&2
unset _tchbook_python _tchbook_req _tchbook_want _tchbook_site
