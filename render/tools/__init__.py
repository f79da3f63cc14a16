"""The measuring tools beside the renderer: `physarum bench`, `physarum profile` and per-step statistics (`render --stats`)."""
