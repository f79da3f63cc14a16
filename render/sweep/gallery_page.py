"""The gallery's page text: its style (STYLE), its script (SCRIPT) and the HTML around the cards
(PAGE, a str.format template).

The script sorts and filters the cards in the page, reads `?filter=KEY=VALUE&sort=KEY&order=desc`
from the address, plays a card's GIF while it is hovered or focused, and copies a job's embedded
preset YAML. PAGE's fields: title, count, done, failed, sort_options, filters, cards, presets
(the JSON of each job's preset YAML, by id), script and style; render/sweep/gallery.py fills them
from a sweep's records, escaped.
"""

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
.card img.transparent { background: repeating-conic-gradient(#ccc 0 25%, #fff 0 50%) 0 0 / 16px 16px; }
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
