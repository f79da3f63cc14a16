"""Named GIF byte budgets (output.gif_max_bytes, `render --gif-target`): published upload limits
as of 2026, which may change (docs/outputs.md, "GIF byte budgets", says where each comes from).
Decimal megabytes: the smaller reading of "MB". A module of its own, importing nothing, so that
`physarum --help` shows them without building the preset schema (render/preset/output_sections.py
validates budgets against them)."""

GIF_TARGETS = {
    "x": 15_000_000,
    "discord": 10_000_000,
    "slack": 5_000_000,
    "telegram": 5_000_000,
    "phone": 5_000_000,
    "preview": 2_000_000,
}
