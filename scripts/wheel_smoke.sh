#!/usr/bin/env bash
# The wheel works on its own: build it from this checkout, install it (not editable) into a fresh
# venv, and from a folder outside the checkout list, validate and render the curated presets
# that ship inside it, render one again from its GIF, and dry-run the example sweeps.
# Usage: scripts/wheel_smoke.sh [WORK_DIR]   (default: a new temporary folder, removed at the end)
# PYTHON picks the interpreter of the venv (default python3). .ci/run calls it; it takes about two minutes.
set -euo pipefail
unset PYTHONPATH  # only the installed wheel may be imported
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
work=$(cd "$work" && pwd)
case "$work/" in "$repo"/*) echo "wheel_smoke: WORK_DIR must be outside $repo" >&2; exit 2 ;; esac
step() { echo "== wheel smoke: $*"; }

step "a fresh venv: torch 2.13.0 (CPU) first, so the wheel's dependencies do not pull a CUDA build"
"${PYTHON:-python3}" -m venv "$work/venv"
py=$work/venv/bin/python
"$py" -m pip install -q --extra-index-url https://download.pytorch.org/whl/cpu torch==2.13.0  # the README's index

step "build the wheel from a copy of the checkout's files (no stale build/ in the tree)"
mkdir -p "$work/src"
git -C "$repo" ls-files -z --cached --others --exclude-standard |
  tar -C "$repo" --null -T - --ignore-failed-read -cf - | tar -C "$work/src" -xf -
"$py" -m pip wheel "$work/src" --no-deps -q -w "$work/wheel"
wheel=$(ls "$work"/wheel/physarum_render-*.whl)  # the distribution physarum-render
listing=$("$py" -m zipfile -l "$wheel")
for entry in physarum/__init__.py physarum/render/py.typed physarum/kernels/py.typed physarum/presets/quickstart.yaml \
  physarum/presets/images/word.png physarum/sweeps/angles.yaml; do
  grep -q "^$entry " <<<"$listing" || { echo "$wheel lacks $entry" >&2; exit 1; }
done

step "install $(basename "$wheel") (not editable)"
"$py" -m pip install -q "$wheel"
physarum=$work/venv/bin/physarum
mkdir -p "$work/elsewhere" && cd "$work/elsewhere"  # nothing of the checkout is on any path here
"$py" - <<'EOF'
import importlib.resources as resources
import physarum.render
assert "site-packages" in physarum.render.__file__, physarum.render.__file__
assert resources.files("physarum.render").joinpath("py.typed").is_file()
EOF

step "the Python API: physarum.__version__, load, change and frames from the installed package"
"$py" - <<'EOF'
import sys
import physarum
assert "site-packages" in physarum.__file__ and physarum.__version__, physarum.__file__
preset = physarum.load("quickstart", {"run.steps": 12, "run.steps_per_frame": 3, "canvas.width": 64})
assert "torch" not in sys.modules, "import physarum and load loaded torch"
# quickstart crossfades half its run: 4 frames simulated, 2 shown
frames = list(physarum.frames(physarum.change(preset, {"canvas.height": 48}), backend="torch", device="cpu"))
assert len(frames) == 2 and preset.frames == 4 and frames[0].shape == (48, 64, 3), [f.shape for f in frames]
EOF

step "physarum presets lists every curated preset"
names=$(cd "$repo/presets" && LC_ALL=C ls -- *.yaml | sed 's/\.yaml$//')
listed=$("$physarum" presets | awk '{print $1}')
[ "$listed" = "$names" ] || { printf 'listed:\n%s\nexpected:\n%s\n' "$listed" "$names" >&2; exit 1; }

step "physarum validate, every curated preset by name"
# shellcheck disable=SC2086  # one argument per name
"$physarum" validate $names

cpu=(--backend torch --device cpu --quiet)
again() {  # FILE OUT: render FILE again into OUT; the GIF, MP4 and PNG must have the same bytes
  local file=$1 out=$2 name
  "$physarum" render --from "$file" "${cpu[@]}" --out "$out"
  name=$(basename "$file" .gif)
  for ext in gif mp4 png; do
    cmp "$(dirname "$file")/$name.$ext" "$out/$(basename "$(dirname "$file")")/$name.$ext"
  done
}

step "render quickstart (a few steps), then render --from its GIF: the same bytes"
"$physarum" render quickstart "${cpu[@]}" --out out --set run.steps=40 --set run.steps_per_frame=4
for ext in gif mp4 png; do [ -s out/quickstart/quickstart-s1.$ext ]; done
again out/quickstart/quickstart-s1.gif again

step "a world preset whose images ship in the package: the same pixels as from the checkout"
small=(--set canvas.width=256 --set canvas.height=128 --set agents.count=20000 --set run.steps=12
  --set run.steps_per_frame=3)
"$physarum" render lettering "${cpu[@]}" --out out "${small[@]}"
grep -q "$work/venv/.*/physarum/presets/images/word.png" out/lettering/lettering-s5.json
again out/lettering/lettering-s5.gif again
(cd "$repo" && "$physarum" render presets/lettering.yaml "${cpu[@]}" --out "$work/checkout" "${small[@]}")
"$py" - "$work" <<'EOF'
import sys
from PIL import Image, ImageSequence
work = sys.argv[1]
for ext in ("png", "gif"):
    installed, checkout = (Image.open(f"{work}/{d}/lettering/lettering-s5.{ext}") for d in ("elsewhere/out", "checkout"))
    frames = [[f.convert("RGB").tobytes() for f in ImageSequence.Iterator(i)] for i in (installed, checkout)]
    assert frames[0] == frames[1], f"lettering {ext}: the installed package renders other pixels"
EOF

step "physarum sweep --dry-run of the example sweeps"
grep -q "^sweep angles: 16 jobs" <<<"$("$physarum" sweep angles --dry-run)"
grep -q "^sweep random: 24 jobs" <<<"$("$physarum" sweep random --dry-run)"  # base: ../presets/quickstart.yaml
[ ! -e outputs ]  # a dry run writes nothing
step "ok"
