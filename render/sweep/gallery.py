"""The gallery of a sweep: index.html to browse every job (and contact.png, contact.py, to see
them all at once).

The page is one static file that works from the file system with no server and no network: its
CSS and script are inline, previews are relative links to each job's GIF (or PNG), and every
job's preset YAML is embedded for the copy button. Sorting and filtering happen in the page;
`index.html?filter=model.decay=0.1&sort=model.sensor_angle&order=desc` opens it filtered. A job
with a GIF and a PNG shows the PNG (its last frame) and plays the GIF while hovered or focused.

The page's text (style, script, the HTML around the cards) is render/sweep/gallery_page.py; this
module fills it. Records are the sweep manifest's last record of each job (manifest.job_record):
id, name, index, status, params, preset, and for done jobs outputs (paths relative to the sweep
folder).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from urllib.parse import quote

import yaml

from ..base.errors import printable
from ..base.storage import LocalStore, Store
from ..formats.gif_file import preview_size
from .contact import alpha_mode, write_contact_sheet
from .gallery_page import PAGE, SCRIPT, STYLE
from .labels import format_value
from .manifest import local_path

SELECT_VALUES = 24  # a parameter with at most this many distinct values is filtered by a list


def write_gallery(sweep_dir: Path | Store, records: list[dict]):
    """Write index.html and contact.png for these job records in the sweep's folder or its store
    (object storage: the stills are read from the stored files); returns the page's path (or URL)."""
    store = sweep_dir if isinstance(sweep_dir, Store) else LocalStore(Path(sweep_dir))
    store.write_bytes("index.html", gallery_html(store.location, records).encode("utf-8"))
    write_contact_sheet(store, records)
    return store.location / "index.html"


def _href(path: str) -> str:
    """A local path as an attribute value: percent-encoded ('#', '?', '%'), then escaped."""
    return html.escape(quote(path, safe="/"))


def _preview(record: dict) -> str | None:
    """A done job's animated preview (its GIF), else its PNG still; None for other jobs."""
    outputs = record.get("outputs") or {}
    if record.get("status") != "done":
        return None
    return local_path(outputs.get("gif")) or local_path(outputs.get("png"))


def _still(record: dict) -> str | None:
    """A done job's PNG still (its last frame), shown until its GIF is played; else None."""
    if record.get("status") != "done":
        return None
    return local_path((record.get("outputs") or {}).get("png"))


def _script_json(value) -> str:
    """JSON safe inside a <script> element: no '<', '>' or '&', so no '</script>' or '<!--' ends it
    early or changes how it is parsed."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def preset_yaml(record: dict) -> str:
    """A job's preset as a YAML file headed by its name and id (what the copy button copies)."""
    name = printable(record.get("name", record["id"]))
    header = f"# physarum sweep job {name} ({printable(record['id'])})\n"
    return header + yaml.safe_dump(record.get("preset", {}), sort_keys=False)


def gallery_html(sweep_dir: Path, records: list[dict]) -> str:
    """index.html for these records: a card per job, controls for every swept key and status."""
    keys = list(dict.fromkeys(key for record in records for key in record.get("params", {})))
    title = sweep_dir.name
    done = sum(1 for r in records if r.get("status") == "done")
    cards = "\n".join(_card(record, keys) for record in records)
    presets = {record["id"]: preset_yaml(record) for record in records}
    sort_options = "".join(f'<option value="{html.escape(k)}">{html.escape(k)}</option>' for k in keys)
    filters = "".join(_filter_control(key, [r.get("params", {}).get(key) for r in records]) for key in keys)
    statuses = sorted({r.get("status", "?") for r in records})
    filters += _select("status", statuses)
    return PAGE.format(
        title=html.escape(title),
        count=len(records),
        done=done,
        failed=len(records) - done,
        sort_options=sort_options,
        filters=filters,
        cards=cards,
        presets=_script_json(presets),
        script=SCRIPT,
        style=STYLE,
    )


def _select(key: str, values: list[str]) -> str:
    options = "".join(f'<option value="{html.escape(v)}">{html.escape(v)}</option>' for v in values)
    return (
        f'<label>{html.escape(key)} <select data-filter="{html.escape(key)}">'
        f'<option value="">any</option>{options}</select></label>'
    )


def _filter_control(key: str, values: list) -> str:
    labels = list(dict.fromkeys(format_value(v) for v in values if v is not None))
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values if v is not None)
    if numbers:
        labels.sort(key=float)
    if len(labels) <= SELECT_VALUES:
        return _select(key, labels)
    if numbers:  # many distinct numbers (random sweeps): a range
        k = html.escape(key)
        return (
            f'<label>{k} <input type="number" step="any" data-min="{k}" placeholder="min"> '
            f'<input type="number" step="any" data-max="{k}" placeholder="max"></label>'
        )
    return (
        f'<label>{html.escape(key)} <input type="search" data-contains="{html.escape(key)}" '
        f'placeholder="contains"></label>'
    )


def _card(record: dict, keys: list[str]) -> str:
    """A job's card; every value from the record is escaped, and only local paths are linked."""
    params = record.get("params", {})
    values = {key: format_value(params[key]) for key in keys if key in params}
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in values.items())
    preview = _preview(record)
    preset = record.get("preset", {})
    width, height = _preview_size(preset)
    name, job_id = html.escape(str(record.get("name", record["id"]))), html.escape(str(record["id"]))
    status = html.escape(str(record.get("status", "")))
    still = _still(record)
    # a transparent still (output.alpha's RGBA PNG) is shown over a checkerboard (STYLE)
    shown = f' class="transparent" data-alpha="{alpha_mode(record)}"' if still and alpha_mode(record) else ""
    if preview and still and still != preview:  # the still until hovered, focused or played
        picture = (
            f'<a href="{_href(preview)}" class="plays"><img{shown} src="{_href(still)}" alt="{name}" '
            f'data-still="{_href(still)}" data-gif="{_href(preview)}" '
            f'width="{width}" height="{height}" loading="lazy"></a>'
        )
    elif preview:
        picture = (
            f'<a href="{_href(preview)}"><img{shown} src="{_href(preview)}" alt="{name}" '
            f'width="{width}" height="{height}" loading="eager"></a>'
        )
    else:
        error = html.escape(str(record.get("error") or record.get("status", "")).strip())
        picture = f'<div class="missing"><b>{status or "?"}</b><pre>{error}</pre></div>'
    outputs = record.get("outputs") or {}
    links = "".join(
        f' <a href="{_href(local_path(path))}">{html.escape(str(fmt))}</a>'
        for fmt, path in outputs.items()
        if local_path(path)
    )
    index = record.get("index", 0)
    return (
        f'<figure class="card {status}" id="job-{job_id}" '
        f'data-index="{index if isinstance(index, int) else 0}" data-status="{status}" '
        f'data-values="{html.escape(json.dumps(values))}" data-numbers="{html.escape(json.dumps(_numbers(params, keys)))}">'
        f'{picture}<figcaption><div class="name"><b>{name}</b> <code>{job_id}</code>{links}</div>'
        f"<table>{rows}</table>"
        f'<button type="button" class="copy" data-id="{job_id}">copy preset YAML</button>'
        f"</figcaption></figure>"
    )


def _numbers(params: dict, keys: list[str]) -> dict:
    return {
        k: params[k]
        for k in keys
        if isinstance(params.get(k), (int, float)) and not isinstance(params.get(k), bool)
    }


def _preview_size(preset: dict) -> tuple[int, int]:
    """The size of a job's GIF preview from its recorded preset (the still's size without a GIF;
    256x256 where the record does not say)."""
    canvas, output = preset.get("canvas"), preset.get("output")
    canvas, output = canvas if isinstance(canvas, dict) else {}, output if isinstance(output, dict) else {}
    width, height = canvas.get("width", 256), canvas.get("height", 256)
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1 << 16 for v in (width, height)):
        width, height = 256, 256
    formats = output.get("formats")
    scale = output.get("gif_scale", 1.0) if isinstance(formats, list) and "gif" in formats else 1.0
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not 0 < scale <= 1:
        scale = 1.0
    return preview_size(width, height, scale)
