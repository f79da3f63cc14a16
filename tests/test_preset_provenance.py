"""What outputs carry about the versions that made them, and what `render --from` says of a file
of another output version or made with other encoder builds; what a render embeds, --from reads
back (a preset whose aliases expand past the loader's limits is refused before it starts)."""

from __future__ import annotations

import json
import os

import yaml

from physarum.render.cli.main import main
from physarum.render.preset import build_preset
from physarum.render.preset.provenance import (
    OUTPUT_VERSION,
    OUTPUT_VERSIONS,
    Provenance,
    builds_note,
    embedded_text,
    encoder_builds,
    version,
)
from support import tiny_data


def tiny_text() -> str:
    return embedded_text(build_preset(tiny_data(), "tiny.yaml"))


def test_the_embedded_header_names_the_release_and_the_output_version():
    header, rest = tiny_text().split("\n", 1)
    assert header == f"# physarum {version()}, output {OUTPUT_VERSION}"
    assert yaml.safe_load(rest)["name"] == "tiny"
    assert Provenance.of(tiny_text()) == Provenance(version(), OUTPUT_VERSION)
    assert OUTPUT_VERSIONS[OUTPUT_VERSION][0] == version()  # a new output version is a new release


def test_headers_of_earlier_files_and_of_none():
    assert Provenance.of("# physarum 0.1.0\nname: tiny\n") == Provenance("0.1.0", 1)
    assert Provenance.of("name: tiny\n") == Provenance(None, None)
    assert Provenance.of("# physarum sweep job s-0001 (ab12)\nname: s\n") == Provenance(None, None)


def sidecar_with(tmp_path, header: str):
    """A JSON sidecar whose embedded preset carries `header` as its first line."""
    text = header + "\n" + tiny_text().split("\n", 1)[1]
    path = tmp_path / "shared.json"
    path.write_text(json.dumps({"preset_yaml": text}))
    return path


def render_from(path, out) -> int:
    return main(["render", "--from", str(path), "--out", str(out), "--quiet", "--backend", "torch"])


def test_from_a_file_of_an_earlier_output_version_says_which_release_reproduces_it(tmp_path, capsys):
    assert render_from(sidecar_with(tmp_path, "# physarum 0.1.0"), tmp_path / "out") == 0
    err = capsys.readouterr().err
    assert "shared.json is of output version 1 (physarum 0.1.0)" in err
    assert f"renders output version {OUTPUT_VERSION}" in err
    assert "physarum 0.1.0 reproduces the file byte for byte" in err
    assert (tmp_path / "out" / "tiny" / "tiny-s3.gif").exists()


def test_from_a_file_of_a_newer_output_version_says_so(tmp_path, capsys):
    newer = OUTPUT_VERSION + 1
    assert render_from(sidecar_with(tmp_path, f"# physarum 9.0.0, output {newer}"), tmp_path / "out") == 0
    err = capsys.readouterr().err
    assert f"physarum 9.0.0 (output version {newer}), newer than this" in err


def test_from_a_file_of_this_output_version_says_nothing_about_versions(tmp_path, capsys):
    assert render_from(sidecar_with(tmp_path, tiny_text().split("\n", 1)[0]), tmp_path / "out") == 0
    assert "output version" not in capsys.readouterr().err


def test_the_release_a_file_names_is_printed_escaped_and_short(tmp_path, capsys):
    """The header is a stranger's text: bidirectional controls in the release it names reach the
    terminal escaped, and a long one is cut (found by tests/test_fuzz.py). YAML itself refuses
    the C0 controls (a terminal escape) even in a comment."""
    header = f"# physarum 9.\u2066\u202e{'9' * 500}, output {OUTPUT_VERSION + 1}"
    assert render_from(sidecar_with(tmp_path, header), tmp_path / "out") == 0
    err = capsys.readouterr().err
    note = next(line for line in err.splitlines() if "newer than this" in line)
    assert note.isprintable() and "\\u2066\\u202e" in note
    assert "9" * 41 not in note and "..." in note


def test_a_sidecars_builds_are_compared_key_by_key_and_only_the_known_keys():
    here = encoder_builds()
    assert builds_note(dict(here), "s.json") is None
    assert builds_note({"av": here["av"], "other": "x"}, "s.json") is None  # only BUILDS' keys are read
    assert builds_note(["av", "1"], "s.json") is None and builds_note(None, "s.json") is None
    note = builds_note({**here, "pillow": "1.0"}, "s.json")
    assert f"pillow 1.0 (here {here['pillow']})" in note and "the GIF, WebP and PNG this render" in note
    note = builds_note({"libwebp": "0.1", "libavcodec": {"not": "a string"}}, "s.json")
    assert "libwebp 0.1" in note and "libavcodec" not in note and "the WebP this render" in note


def aliased_preset(tmp_path, keys: int, uses: int):
    """A preset whose model.decay schedule (`keys` keyframes of long decimals) is named again
    through an alias `uses` times (its other model values, then its species'), 2 frames."""
    schedule = "".join(f"      {step}: 0.{step:04d}56789012345\n" for step in range(1, keys + 1))
    names = ["diffuse", "deposit", "step_size", "turn_angle", "sensor_angle", "sensor_distance", "decay"]
    slots = [(s, name) for s in range(-1, 4) for name in names if (s, name) != (-1, "decay")][:uses]
    model = "".join(f"  {name}: *s\n" for s, name in slots if s < 0)
    species = "".join(
        f"- {{name: s{s}, model: {{{', '.join(f'{n}: *s' for n in names if (s, n) in slots)}}}}}\n"
        for s in sorted({s for s, _ in slots if s >= 0})
    )
    text = (
        "name: aliased\nseed: 2\ncanvas: {width: 32, height: 24}\nagents: {count: 50}\n"
        f"run: {{steps: {keys + 2}, steps_per_frame: {keys // 2 + 1}}}\noutput: {{formats: [gif, png]}}\n"
        f"model:\n  decay: &s\n    ease: linear\n    keys:\n{schedule}{model}"
        + (f"species:\n{species}" if species else "")
    )
    path = tmp_path / "aliased.yaml"
    path.write_text(text)
    return path


def test_a_preset_whose_aliases_expand_past_what_from_reads_is_refused_before_it_starts(tmp_path, capsys):
    path = aliased_preset(tmp_path, keys=1000, uses=34)  # 35 schedules written out: over 1 MiB of YAML
    assert os.path.getsize(path) < 100_000
    assert main(["render", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "error: aliased: the preset text its outputs would embed is past what render --from"
    )
    assert "bytes of YAML" in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # nothing written, not even a folder


def test_a_preset_with_aliases_within_the_limits_renders_and_reads_back(tmp_path):
    path = aliased_preset(tmp_path, keys=20, uses=5)
    assert main(["render", str(path), "--out", str(tmp_path / "a"), "--quiet", "--backend", "torch"]) == 0
    gif = tmp_path / "a" / "aliased" / "aliased-s2.gif"
    assert render_from(gif, tmp_path / "b") == 0
    assert (tmp_path / "b" / "aliased" / "aliased-s2.gif").read_bytes() == gif.read_bytes()
