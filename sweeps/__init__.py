"""The example sweeps (YAML). Data, shipped as the package physarum.sweeps;
physarum.render.preset.catalog lists and finds them."""
