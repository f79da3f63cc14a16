#!/bin/bash
# usage: hashes.sh TREE|current OUTFILE
set -e
tree=$1; outfile=$2
work=$(mktemp -d)
if [ "$tree" != current ]; then
  mkdir -p $work/links/physarum
  for p in render kernels presets sweeps; do ln -s $tree/$p $work/links/physarum/$p; done
  ln -s $tree/physarum_api/__init__.py $work/links/physarum/__init__.py
  export PYTHONPATH=$work/links
fi
PY=/work/main/.venv/bin/python
cd $work
: > $outfile
run() { name=$1; shift; $PY -m physarum.render.cli render "$@" --backend torch --device cpu --quiet --out $work/$name > /dev/null; for f in $(ls $work/$name/*/* | grep -v json); do echo "$name $(basename $f) $(sha256sum < $f | cut -c1-16)" >> $outfile; done; python3 -c "import json,glob; d=json.load(open(glob.glob('$work/$name/*/*.json')[0])); b=d.get('gif_budget'); print('$name budget', b and (b['chosen'], b['bytes']), b and b.get('cost'))" >> $outfile; }
run qs4 quickstart --reduce 4
run qs4b quickstart --reduce 4 --set output.gif_max_bytes=300KB
run qs2b quickstart --reduce 2 --set output.gif_max_bytes=1MB --set 'output.formats=[gif]'
run lab4 labyrinth --reduce 4 --set output.gif_max_bytes=2MB --set 'output.formats=[gif,png]'
run tiny3d nebula --reduce 8 --set output.gif_max_bytes=40KB --set 'output.formats=[gif]'
echo "tree $tree ($PYTHONPATH)" >> $outfile
rm -rf $work
