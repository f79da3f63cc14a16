"""Attacks on where a render writes (render/base/storage.py, render/commands/render.py): an --out
URL writes where it names or nowhere, one message, exit 2."""

from __future__ import annotations

import pytest

import physarum
from physarum.render.base.errors import RenderError
from physarum.render.cli.main import main
from support import tiny_data, write_preset


@pytest.mark.parametrize("url", ["file://outputs/x", "file://"])
def test_a_file_url_with_a_host_writes_nowhere(tmp_path, capsys, monkeypatch, url):
    """file://outputs/x is the path /x on the host 'outputs': it once rendered into /x."""
    monkeypatch.chdir(tmp_path)
    preset_file = write_preset(tmp_path, tiny_data(output={"formats": ["png"]}))
    assert main(["render", str(preset_file), "--out", url, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "a file URL is file:///ABSOLUTE/PATH" in err and "Traceback" not in err
    with pytest.raises(RenderError, match="a file URL is file:///ABSOLUTE/PATH"):
        physarum.render(physarum.load(str(preset_file)), out=url)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preset.yaml"]


@pytest.mark.parametrize("command", ["graph", "live", "sensitivity", "explore", "still"])
def test_a_command_without_object_storage_refuses_an_out_url(tmp_path, capsys, monkeypatch, command):
    """physarum graph X --out s3://b/g wrote into a local folder named 's3:' and said nothing."""
    monkeypatch.chdir(tmp_path)
    preset_file = write_preset(tmp_path, tiny_data(output={"formats": ["png"]}))
    assert main([command, str(preset_file), "--out", "s3://bucket/x"]) == 2
    err = capsys.readouterr().err
    assert f"physarum {command} writes into a local folder, not a URL" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preset.yaml"]
