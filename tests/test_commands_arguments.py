"""The API's arguments (render/commands/arguments.py): a wrong type is one TypeError naming the
call, the argument and what it takes, raised before anything runs, never an AttributeError from
deep inside."""

from __future__ import annotations

import pytest

import physarum
from support import tiny_data, write_preset

CASES = [
    ("a name for a Preset", lambda p, o: physarum.render("quickstart", out=o), "preset must be a Preset"),
    ("a path for a Preset", lambda p, o: physarum.render_files(o, out=o), "preset must be a Preset"),
    ("a dict for a Preset", lambda p, o: physarum.change({"name": "x"}, {}), "preset must be a Preset"),
    ("formats as one text", lambda p, o: physarum.render(p, out=o, formats="gif"), "formats must be a list"),
    (
        "a format that is no text",
        lambda p, o: physarum.render(p, out=o, formats=[1]),
        "each format is a name",
    ),
    ("a backend that is no text", lambda p, o: physarum.render(p, out=o, backend=1), "backend must be text"),
    ("a device that is no text", lambda p, o: physarum.render(p, out=o, device=0), "device must be text"),
    ("out that is no path", lambda p, o: physarum.render(p, out=3), "out must be a name or a path"),
    ("quiet as text", lambda p, o: physarum.render(p, out=o, quiet="no"), "quiet must be True or False"),
    (
        "an option render does not take",
        lambda p, o: physarum.render(p, out=o, fromat=["gif"]),
        "no option 'fromat'",
    ),
    (
        "settings as a list",
        lambda p, o: physarum.change(p, ["model.decay=0.2"]),
        "settings must be a mapping",
    ),
    (
        "a settings key that is no text",
        lambda p, o: physarum.load("quickstart", {1: 2}),
        "a key must be text",
    ),
    (
        "a value JSON cannot write",
        lambda p, o: physarum.change(p, {"model.decay": object()}),
        "a value must be",
    ),
    ("a name that is no text", lambda p, o: physarum.load(3), "name_or_path must be a name or a path"),
    (
        "a sweep option it does not take",
        lambda p, o: physarum.sweep("angles", o, batch=2),
        "no option 'batch'",
    ),
    (
        "max_batch as text",
        lambda p, o: physarum.sweep("angles", o, dry_run=True, max_batch="2"),
        "max_batch must be",
    ),
]


@pytest.mark.parametrize("case, call, message", CASES, ids=[case for case, _, _ in CASES])
def test_a_wrong_type_of_argument_is_one_type_error_naming_it(tmp_path, case, call, message):
    preset = physarum.load(write_preset(tmp_path, tiny_data(output={"formats": ["png"]})))
    with pytest.raises(TypeError, match=message) as error:
        call(preset, tmp_path / "o")
    assert str(error.value).startswith("physarum.")  # the call it names
    assert not (tmp_path / "o").exists()


def test_a_name_given_for_a_preset_says_how_to_load_it():
    with pytest.raises(TypeError, match=r"got str 'quickstart'; .* physarum.load\('quickstart'\)"):
        physarum.render("quickstart")


def test_a_settings_key_with_an_equals_sign_is_a_preset_error():
    """{"model.decay=0.2": 1} would set model.decay to '0.2=1' through --set's split."""
    with pytest.raises(physarum.PresetError, match="not a dotted key"):
        physarum.load("quickstart", {"model.decay=0.2": 1})
