"""The curated presets (YAML; images/ holds the pictures the world presets name by relative
path). Data, shipped as the package physarum.presets; physarum.render.preset.catalog lists and finds them."""
