"""The gallery page, parsed and in a real headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from physarum.render import sweep as sweeps
from physarum.render.sweep import preset_yaml, write_gallery
from support import sweep_records


class PageParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.body, self.images, self.cards, self.scripts, self._script = {}, [], [], {}, None
        self.clip = ""

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "body":
            self.body = attrs
        elif tag == "img":
            self.images.append(attrs)
        elif tag == "figure":
            self.cards.append(attrs)
        elif tag in ("script", "textarea"):
            self._script = attrs.get("id")

    def handle_data(self, data):
        if self._script:
            self.scripts[self._script] = self.scripts.get(self._script, "") + data

    def handle_endtag(self, tag):
        if tag in ("script", "textarea"):
            self._script = None


def parse_page(text: str) -> PageParser:
    parser = PageParser()
    parser.feed(text)
    return parser


def test_gallery_page_links_embeds_and_escapes(tmp_path):
    sweep_dir, records = sweep_records(tmp_path, failed=True)
    page = write_gallery(sweep_dir, records)
    text = page.read_text()
    parsed = parse_page(text)
    assert len(parsed.cards) == 5 and len(parsed.images) == 4
    for image in parsed.images:
        assert not image["src"].startswith(("/", "http")) and (sweep_dir / image["src"]).is_file()
    assert "http://" not in text and "https://" not in text
    presets = json.loads(parsed.scripts["presets"])
    for record in records:
        assert yaml.safe_load(presets[record["id"]]) == record["preset"]
    job = sweeps.load_sweep(tmp_path / "s.yaml").jobs[3]
    assert yaml.safe_load(presets[job.id]) == job.preset.model_dump(mode="json")
    assert "&lt;boom&gt; &amp; more" in text
    card = next(c for c in parsed.cards if c["id"] == f"job-{job.id}")
    assert json.loads(card["data-values"]) == {
        "model.sensor_angle": "45",
        "model.turn_angle": "20",
        "seed": "1",
    }
    assert (sweep_dir / "contact.png").is_file()  # write_gallery writes the contact sheet too
    for image in parsed.images:  # the still (the last frame) until the GIF is played
        assert image["src"].endswith(".png") and image["data-still"] == image["src"]
        assert image["data-gif"].endswith(".gif") and (sweep_dir / image["data-gif"]).is_file()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_dom(url: str, tmp_path: Path) -> str:
    profile = tmp_path / f"profile-{time.monotonic_ns()}"
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, check=True).stdout


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)")
@pytest.mark.slow
def test_gallery_in_headless_chromium_loads_filters_and_copies(tmp_path):
    sweep_dir, records = sweep_records(tmp_path)
    page = write_gallery(sweep_dir, records)
    dom = parse_page(chromium_dom(page.as_uri(), tmp_path))
    assert dom.body["data-errors"] == "0", dom.body
    assert dom.body["data-ready"] == "1" and dom.body["data-images-loaded"] == "4"
    assert len(dom.images) == 4
    assert all(i["data-loaded"] == "1" and int(i["data-natural-width"]) > 0 for i in dom.images)
    assert all("hidden" not in c for c in dom.cards)

    filtered = parse_page(
        chromium_dom(
            page.as_uri() + "?filter=model.turn_angle=20&sort=model.sensor_angle&order=desc&selftest=copy",
            tmp_path,
        )
    )
    assert filtered.body["data-errors"] == "0"
    shown = [c for c in filtered.cards if "hidden" not in c]
    assert filtered.body["data-shown"] == "2" and len(shown) == 2
    assert all(json.loads(c["data-values"])["model.turn_angle"] == "20" for c in shown)
    assert [json.loads(c["data-values"])["model.sensor_angle"] for c in shown] == ["45", "15"]
    assert [json.loads(c["data-values"])["model.sensor_angle"] for c in filtered.cards][0] == "45"
    first = next(r for r in records if f"job-{r['id']}" == shown[0]["id"])
    # Headless Chromium refuses clipboard writes from a scripted click (no user gesture); the
    # page then leaves the YAML selected in a visible text box, which is what is checked here.
    assert filtered.body["data-copy-method"] in ("clipboard", "execCommand", "failed")
    assert filtered.body["data-copy-chars"] == str(len(preset_yaml(first)))
    if filtered.body["data-copy-method"] != "clipboard":
        assert filtered.scripts["clip"] == preset_yaml(first)


def test_gallery_escapes_a_crafted_record_and_links_only_local_files(tmp_path):
    sweep_dir, records = sweep_records(tmp_path)
    evil = "</script><script>alert(1)</script><!--"
    crafted = {
        **records[0],
        "id": 'x"><script>alert(2)</script>',
        "name": evil,
        "index": 7,
        "params": {evil: evil, **records[0]["params"]},
        "preset": {**records[0]["preset"], "name": evil},
        "outputs": {
            "gif": "javascript:alert(3)",
            "png": "../../etc/passwd",
            "mp4": "/etc/passwd",
            "json": "data:text/html,<script>alert(4)</script>",
            "<b>": "http://example.com/x.gif",
        },
    }
    text = write_gallery(sweep_dir, [*records, crafted]).read_text()
    assert text.count("<script") == 2  # the page's own: the presets' JSON and its script
    assert "<script>alert" not in text
    assert "javascript:" not in text and "data:text" not in text and "example.com" not in text
    assert "/etc/passwd" not in text and "<!--" not in text
    presets = json.loads(parse_page(text).scripts["presets"])  # its </script> did not end it
    assert yaml.safe_load(presets[crafted["id"]])["name"] == evil  # kept, as data
    hrefs = re.findall(r'(?:href|src)="([^"]*)"', text)
    assert hrefs and all(":" not in h and ".." not in h and not h.startswith("/") for h in hrefs)


def test_gallery_survives_wrong_typed_preset_fields(tmp_path):
    sweep_dir, records = sweep_records(tmp_path)
    odd = {**records[0], "preset": {"canvas": "wide", "output": {"formats": 3, "gif_scale": "big"}}}
    assert 'width="256" height="256"' in write_gallery(sweep_dir, [odd]).read_text()
