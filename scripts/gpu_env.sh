# Sourced by the GPU scripts: puts the carried wheels and this checkout on the Python path of
# the GPU machine's own python3 (torch and triton come with its image) and defines `physarum`.
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
# The package maps render/, kernels/, presets/ and sweeps/ to physarum.*; a link tree stands in
# for an install.
mkdir -p .pyroot/physarum
for part in render kernels presets sweeps; do ln -sfn "$PWD/$part" ".pyroot/physarum/$part"; done
export PYTHONPATH=/tmp/site:$PWD/.pyroot
export PYTHONUNBUFFERED=1
physarum() { python3 -m physarum.render.cli "$@"; }
# verdict FILE CPU_FOLDER: one line of a byte-identical check of a GPU's file against its twin
# in CPU_FOLDER: identical, DIFFERENT or NOT-RENDERED-ON-CPU, the name, size and sha256 prefix
verdict() {
  local other result
  other="$2/$(basename "$1")"
  if [ ! -f "$other" ]; then result=NOT-RENDERED-ON-CPU
  elif cmp -s "$1" "$other"; then result=identical; else result=DIFFERENT; fi
  echo "$result $(basename "$1") $(stat -c %s "$1") $(sha256sum < "$1" | cut -c1-16)"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
