"""The gallery of a sweep: index.html to browse every job (and contact.png, contact.py, to see
them all at once).

The page is one static file that works from the file system with no server and no network: its
CSS and script are inline, previews are relative links to each job's GIF (or PNG), and every
job's preset YAML is embedded for the copy button. Sorting and filtering happen in the page;
`index.html?filter=model.decay=0.1&sort=model.sensor_angle&order=desc` opens it filtered. A job
with a GIF and a PNG shows the PNG (its last frame) and plays the GIF while hovered or focused.

Records are the sweep manifest's last record of each job (manifest.job_record): id, name, index,
status, params, preset, and for done jobs outputs (paths relative to the sweep folder).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from urllib.parse import quote

import yaml

from physarum.render.base.errors import printable
from physarum.render.base.files import written_whole
from physarum.render.look.colour import preview_size
from physarum.render.sweep.contact import write_contact_sheet
from physarum.render.sweep.labels import format_value
from physarum.render.sweep.manifest import local_path

SELECT_VALUES = 24  # a parameter with at most this many distinct values is filtered by a list


def write_gallery(sweep_dir: Path, records: list[dict]) -> Path:
    """Write sweep_dir/index.html and sweep_dir/contact.png for these job records; returns the page."""
    sweep_dir = Path(sweep_dir)
    page = sweep_dir / "index.html"
    with written_whole(page) as temporary:
        temporary.write_text(gallery_html(sweep_dir, records), encoding="utf-8")
    write_contact_sheet(sweep_dir, records)
    return page


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
    if preview and still and still != preview:  # the still until hovered, focused or played
        picture = (
            f'<a href="{_href(preview)}" class="plays"><img src="{_href(still)}" alt="{name}" '
            f'data-still="{_href(still)}" data-gif="{_href(preview)}" '
            f'width="{width}" height="{height}" loading="lazy"></a>'
        )
    elif preview:
        picture = (
            f'<a href="{_href(preview)}"><img src="{_href(preview)}" alt="{name}" '
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


STYLE = """
:root { color-scheme: dark; --bg: #101014; --card: #1b1b22; --text: #e1e1e6; --dim: #9a9aa6; }
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--text); }
header { position: sticky; top: 0; z-index: 1; background: #16161ccc; backdrop-filter: blur(6px);
         padding: 10px 16px; border-bottom: 1px solid #2a2a33; }
h1 { margin: 0 0 4px; font-size: 18px; }
header p { margin: 0 0 8px; color: var(--dim); }
a { color: #8ab4ff; }
#controls { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: center; }
#controls label { white-space: nowrap; color: var(--dim); }
select, input, button { background: #24242c; color: var(--text); border: 1px solid #3a3a46;
                        border-radius: 4px; padding: 2px 6px; font: inherit; }
input[type=number] { width: 6em; }
button { cursor: pointer; }
main { display: grid; grid-template-columns: repeat(auto-fill, minmax(272px, 1fr)); gap: 12px; padding: 16px; }
.card { margin: 0; background: var(--card); border-radius: 6px; padding: 8px; }
.card[hidden] { display: none; }
.card img { display: block; width: 256px; max-width: 100%; height: auto; image-rendering: pixelated;
            margin: 0 auto; background: #000; }
.card .missing { height: 160px; overflow: auto; color: #e07070; }
.card .missing pre { white-space: pre-wrap; font-size: 11px; }
.card table { border-collapse: collapse; margin: 4px 0; font-size: 12px; }
.card th { text-align: left; font-weight: normal; color: var(--dim); padding-right: 8px; }
.card .name { margin-top: 6px; }
.card .name a { font-size: 12px; }
code { color: var(--dim); }
#clip { position: fixed; left: -9999px; top: 0; }
"""


SCRIPT = r"""
(function () {
  "use strict";
  var body = document.body;
  var errorLog = document.getElementById("errors");
  function recordError(message) {
    body.dataset.errors = String(Number(body.dataset.errors || 0) + 1);
    errorLog.hidden = false;
    errorLog.textContent += message + "\n";
  }
  window.onerror = function (message, source, line) { recordError(message + " (" + source + ":" + line + ")"); };
  window.addEventListener("unhandledrejection", function (event) { recordError("unhandled: " + event.reason); });
  var consoleError = console.error;
  console.error = function () {
    recordError(Array.prototype.join.call(arguments, " "));
    consoleError.apply(console, arguments);
  };

  // A card shows its job's last frame (the PNG) and plays the GIF while hovered or focused, so
  // that the page opens on meaningful stills and loads each GIF only when it is looked at.
  Array.prototype.forEach.call(document.querySelectorAll("a.plays"), function (link) {
    var image = link.querySelector("img");
    function play() { if (image.getAttribute("src") !== image.dataset.gif) image.src = image.dataset.gif; }
    function still() { image.src = image.dataset.still; }
    link.addEventListener("mouseenter", play);
    link.addEventListener("focus", play);
    link.addEventListener("mouseleave", still);
    link.addEventListener("blur", still);
  });

  var presets = JSON.parse(document.getElementById("presets").textContent);
  var grid = document.getElementById("cards");
  var cards = Array.prototype.slice.call(grid.querySelectorAll(".card"));
  cards.forEach(function (card) {
    card.values = JSON.parse(card.dataset.values);
    card.numbers = JSON.parse(card.dataset.numbers);
  });
  var filters = {};  // key -> {equals: label} | {min: n} | {max: n} | {contains: text}
  var sortKey = "index", descending = false;

  function valueOf(card, key) { return key === "status" ? card.dataset.status : card.values[key]; }
  function sameValue(label, wanted) {
    if (label === undefined) return false;
    var a = Number(label), b = Number(wanted);
    if (label !== "" && wanted !== "" && !isNaN(a) && !isNaN(b)) return a === b;
    return label === wanted;
  }
  function matches(card) {
    return Object.keys(filters).every(function (key) {
      var rule = filters[key], label = valueOf(card, key), number = card.numbers[key];
      if (rule.equals !== undefined && rule.equals !== "" && !sameValue(label, rule.equals)) return false;
      if (rule.min !== undefined && !(number >= rule.min)) return false;
      if (rule.max !== undefined && !(number <= rule.max)) return false;
      if (rule.contains && (label || "").indexOf(rule.contains) < 0) return false;
      return true;
    });
  }
  function apply() {
    var shown = 0;
    cards.forEach(function (card) { card.hidden = !matches(card); if (!card.hidden) shown++; });
    document.getElementById("shown").textContent = shown + " of " + cards.length + " shown";
    body.dataset.shown = String(shown);
  }
  function compare(a, b) {  // 0 for ties, which keep job order either way
    if (sortKey === "index") return Number(a.dataset.index) - Number(b.dataset.index);
    var x = sortKey in a.numbers ? a.numbers[sortKey] : valueOf(a, sortKey);
    var y = sortKey in b.numbers ? b.numbers[sortKey] : valueOf(b, sortKey);
    if (x === y) return 0;
    if (x === undefined) return 1;
    if (y === undefined) return -1;
    return x < y ? -1 : 1;
  }
  function sort() {
    cards.sort(function (a, b) {
      var order = compare(a, b);
      if (order === 0) return Number(a.dataset.index) - Number(b.dataset.index);
      return descending ? -order : order;
    });
    cards.forEach(function (card) { grid.appendChild(card); });
    document.getElementById("order").textContent = descending ? "descending" : "ascending";
    document.getElementById("sort").value = sortKey;
  }
  function rule(key) { return filters[key] || (filters[key] = {}); }

  document.querySelectorAll("[data-filter]").forEach(function (select) {
    select.addEventListener("change", function () { rule(select.dataset.filter).equals = select.value; apply(); });
  });
  document.querySelectorAll("[data-min],[data-max]").forEach(function (input) {
    input.addEventListener("input", function () {
      var key = input.dataset.min || input.dataset.max, bound = input.dataset.min ? "min" : "max";
      var value = input.value === "" ? undefined : Number(input.value);
      rule(key)[bound] = value;
      apply();
    });
  });
  document.querySelectorAll("[data-contains]").forEach(function (input) {
    input.addEventListener("input", function () { rule(input.dataset.contains).contains = input.value; apply(); });
  });
  document.getElementById("sort").addEventListener("change", function (event) { sortKey = event.target.value; sort(); });
  document.getElementById("order").addEventListener("click", function () { descending = !descending; sort(); });

  function copyText(text, done) {
    function fallback() {  // also where the text stays, shown, if the browser refuses to copy
      var area = document.getElementById("clip");
      area.textContent = text;
      area.value = text;
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (error) { ok = false; }
      done(ok ? "execCommand" : "failed");
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done("clipboard"); }, fallback);
    } else {
      fallback();
    }
  }
  grid.addEventListener("click", function (event) {
    var button = event.target.closest("button.copy");
    if (!button) return;
    var text = presets[button.dataset.id];
    copyText(text, function (method) {
      button.textContent = method === "failed" ? "copy failed: select it below" : "copied";
      body.dataset.copyMethod = method;
      body.dataset.copyChars = String(text.length);
      if (method === "failed") { var area = document.getElementById("clip"); area.style.position = "static"; }
      setTimeout(function () { button.textContent = "copy preset YAML"; }, 1500);
    });
  });

  var images = Array.prototype.slice.call(document.images), settled = 0, loaded = 0;
  function settle(image, ok) {
    image.dataset.loaded = ok ? "1" : "0";
    image.dataset.naturalWidth = String(image.naturalWidth);
    if (ok) loaded++;
    if (++settled === images.length) { body.dataset.imagesLoaded = String(loaded); body.dataset.ready = "1"; }
  }
  images.forEach(function (image) {
    if (image.complete) { settle(image, image.naturalWidth > 0); return; }
    image.addEventListener("load", function () { settle(image, image.naturalWidth > 0); });
    image.addEventListener("error", function () { settle(image, false); });
  });
  if (!images.length) { body.dataset.imagesLoaded = "0"; body.dataset.ready = "1"; }

  var query = new URLSearchParams(location.search);
  query.getAll("filter").forEach(function (item) {
    item.split(",").forEach(function (pair) {
      var at = pair.indexOf("=");
      if (at < 1) return;
      var key = pair.slice(0, at), value = pair.slice(at + 1);
      rule(key).equals = value;
      var select = document.querySelector('[data-filter="' + CSS.escape(key) + '"]');
      if (select) select.value = value;
    });
  });
  if (query.get("sort")) sortKey = query.get("sort");
  descending = query.get("order") === "desc";
  sort();
  apply();
  if (query.get("selftest") === "copy") {
    var first = grid.querySelector(".card:not([hidden]) button.copy");
    if (first) first.click();
  }
})();
"""


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>physarum sweep {title}</title>
<style>{style}</style>
</head>
<body data-errors="0" data-jobs="{count}">
<header>
<h1>physarum sweep {title}</h1>
<p>{count} jobs: {done} done, {failed} not done &middot; <a href="contact.png">contact sheet</a>
&middot; <a href="manifest.jsonl">manifest</a></p>
<div id="controls">
<label>sort by <select id="sort"><option value="index">job</option>{sort_options}<option value="status">status</option></select></label>
<button type="button" id="order">ascending</button>
{filters}
<span id="shown"></span>
</div>
</header>
<main id="cards">
{cards}
</main>
<textarea id="clip" readonly aria-hidden="true"></textarea>
<pre id="errors" hidden></pre>
<script type="application/json" id="presets">{presets}</script>
<script>{script}</script>
</body>
</html>
"""
