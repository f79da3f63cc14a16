"""The one YAML loader: limits on size, nesting and aliases, duplicate keys refused, exponent
floats read as numbers, every refusal one PresetError naming the line."""

from __future__ import annotations

import time

import pytest

from physarum.render.base.inputs import MAX_TEXT_BYTES
from physarum.render.preset import PresetError, parse_yaml
from physarum.render.preset.safe_yaml import MAX_DEPTH, MAX_NODES


def refusal(text: str) -> str:
    with pytest.raises(PresetError) as caught:
        parse_yaml(text, "p.yaml")
    (problem,) = caught.value.problems
    return problem


def test_nested_aliases_are_refused_at_once():
    """600 bytes that stand for 9^9 values (the 'billion laughs')."""
    names = "abcdefghij"
    text = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{names[i + 1]}: &{names[i + 1]} [{', '.join(['*' + names[i]] * 9)}]\n" for i in range(8)
    )
    start = time.perf_counter()
    problem = refusal(text)
    assert time.perf_counter() - start < 1
    assert problem.startswith("p.yaml: YAML refused at line") and f"more than {MAX_NODES} values" in problem


def test_a_few_aliases_are_still_read():
    data = parse_yaml("base: &b {x: 1, y: 2}\nc: {<<: *b, x: 3}\nd: [*b, *b]\n", "p.yaml")
    assert data["c"] == {"x": 3, "y": 2} and data["d"] == [{"x": 1, "y": 2}] * 2


def test_recursive_aliases_are_refused():
    assert "recursive alias" in refusal("a: &a [*a]\n")


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500, 100_000])
def test_deep_nesting_is_one_message(depth):
    problem = refusal("a: " + "[" * depth + "]" * depth + "\n")
    assert problem == f"p.yaml: YAML refused at line 1: nested more than {MAX_DEPTH} levels deep"


def test_deep_nesting_through_aliases_is_refused():
    deep = "[" * 40 + "]" * 40
    assert f"more than {MAX_DEPTH} levels" in refusal(f"a: &a {deep}\nb: {'[' * 30}*a{']' * 30}\n")


def test_nesting_up_to_the_limit_is_read():
    depth = MAX_DEPTH - 1  # the document's mapping is the first level
    assert parse_yaml("a: " + "[" * depth + "]" * depth, "p.yaml")["a"] is not None


def test_texts_past_the_size_limit_are_refused_before_parsing():
    text = "# padding\n" * (MAX_TEXT_BYTES // 10 + 1)
    assert refusal(text) == f"p.yaml: {len(text)} bytes of YAML; at most {MAX_TEXT_BYTES} bytes are read"


def test_duplicate_keys_are_refused_naming_the_key_and_lines():
    problem = refusal("name: a\nmodel:\n  decay: 0.1\n  deposit: 2\n  decay: 0.2\n")
    assert problem == "p.yaml: YAML refused at line 5: key 'decay' given twice (lines 3 and 5); each key once"


def test_exponent_floats_are_numbers():
    data = parse_yaml("a: 5e-2\nb: 1e3\nc: 1E-3\nd: 2.5e3\ne: -1e+2\nf: .5e1\n", "p.yaml")
    assert data == {"a": 0.05, "b": 1000.0, "c": 0.001, "d": 2500.0, "e": -100.0, "f": 5.0}
    assert all(isinstance(v, float) for v in data.values())
    # the rest resolves as before
    assert parse_yaml("a: 1\nb: 1.0\nc: 1_000\nd: 1e\ne: e3\nf: '1e3'\n", "p.yaml") == {
        "a": 1,
        "b": 1.0,
        "c": 1000,
        "d": "1e",
        "e": "e3",
        "f": "1e3",
    }


def test_a_text_that_is_no_text_or_no_mapping_is_one_message():
    assert refusal(5) == "p.yaml: a preset is YAML text, got int 5"
    assert refusal("[" + "1, " * 1000 + "]").startswith(
        "p.yaml: a preset is a mapping of keys to values, got list [1, 1"
    )
    assert len(refusal("[" + "1, " * 1000 + "]")) < 200
