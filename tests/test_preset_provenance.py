"""What outputs carry about the versions that made them, and what `render --from` says of a file
of another output version."""

from __future__ import annotations

import json

import yaml

from physarum.render.cli.main import main
from physarum.render.preset import build_preset
from physarum.render.preset.provenance import (
    OUTPUT_VERSION,
    OUTPUT_VERSIONS,
    Provenance,
    embedded_text,
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
