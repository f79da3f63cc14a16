# Sourced before scripts/gpu_evidence.py on the GPU host: puts the carried wheels and this
# checkout on the Python path of the GPU machine's own python3 (torch and triton come with its
# image) and defines `physarum`. Usage: source scripts/gpu_env.sh > /dev/null
# The host's copy of .git may be stale: a call's command states the commit it was sent from,
# `export PHYSARUM_COMMIT=<git rev-parse --short=12 HEAD, run here>`, and the harness stamps it.
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
# The package maps render/, kernels/, presets/ and sweeps/ to physarum.*; a link tree stands in
# for an install.
mkdir -p .pyroot/physarum
for part in render kernels presets sweeps; do ln -sfn "$PWD/$part" ".pyroot/physarum/$part"; done
ln -sfn "$PWD/physarum_api/__init__.py" .pyroot/physarum/__init__.py  # the API: physarum itself
export PYTHONPATH=/tmp/site:$PWD/.pyroot
export PYTHONUNBUFFERED=1
physarum() { python3 -m physarum.render.cli "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
