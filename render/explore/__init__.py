"""`physarum explore PRESET`: a batched novelty search over a preset's model. In the order of the
data flow:

- mutate: mutations within documented ranges, reproducible from the seed (the integer hash);
- plan: the options and their bounds, the explored preset, each candidate's preset, the cost;
- describe: per-frame metrics (render/out/metrics.py) into a descriptor; inert and exploding worlds;
- novelty: robust scaling, novelty (mean distance to the 5 nearest), farthest-point selection;
- state: the resumable state, written whole after each batch;
- batch: the candidates of a round, a batch rendered as one simulation;
- archive: the candidates' statuses, descriptors and novelty, the most novel, what is kept;
- outputs: candidates.csv, kept presets, the gallery and contact sheet;
- run: the whole explore, round by round (docs/explore.md).
"""

from .plan import ExploreOptions
from .run import ExploreResult, explore, summary_lines

__all__ = ["ExploreOptions", "ExploreResult", "explore", "summary_lines"]
