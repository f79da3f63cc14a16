"""The one YAML loader of presets, sweeps, `--set` values and the texts `render --from` reads.

It is PyYAML's safe loader (plain data only: mappings, lists, strings, numbers, booleans, null;
no tags that construct objects) with these changes, each refusing input that would otherwise be
misread or cost without bound (docs/presets.md, "Limits"):

- a text of more than MAX_TEXT_BYTES is refused before it is parsed;
- nesting deeper than MAX_DEPTH is refused while the text is composed, before it can exhaust
  the stack; aliases count as the depth of what they expand to;
- a document of more than MAX_NODES values, aliases expanded, is refused (a few hundred bytes
  of nested aliases can otherwise stand for billions of values), and so is an alias to itself;
- a key given twice in one mapping is refused, naming the key and both lines (PyYAML keeps the
  last one silently); keys merged in with `<<` may still be overridden;
- exponent floats are numbers as in YAML 1.2: 5e-2, 1e3, 1E-3 and 2.5e3 (YAML 1.1 reads them
  as strings, so they were refused as "not a valid number").
"""

from __future__ import annotations

import re

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from ..base.errors import PresetError
from ..base.inputs import MAX_TEXT_BYTES, excerpt

MAX_DEPTH = 64  # nested mappings and lists, the document's own level included
MAX_NODES = 100_000  # values a document stands for, aliases expanded
_MERGE = "tag:yaml.org,2002:merge"


class LimitError(yaml.YAMLError):
    """A text refused by a limit of this loader, or a duplicate key: `problem` at `mark`."""

    def __init__(self, problem: str, mark=None):
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark


class SafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the limits and resolvers of this module's docstring."""

    def __init__(self, stream):
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent, index):
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise LimitError(f"nested more than {MAX_DEPTH} levels deep", self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def compose_document(self):
        node = super().compose_document()
        if node is not None:
            _expanded(node, 1, {}, set())
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = self.construct_object(key_node)
                if key in seen:
                    raise LimitError(
                        f"key {excerpt(key)} given twice (lines {seen[key] + 1} and "
                        f"{key_node.start_mark.line + 1}); each key once",
                        key_node.start_mark,
                    )
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


SafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def _expanded(node: Node, level: int, sizes: dict, open_nodes: set) -> tuple[int, int]:
    """(values, depth) of `node` with its aliases expanded; LimitError beyond MAX_NODES values,
    MAX_DEPTH levels or for a node inside itself. Shared nodes are measured once (`sizes`)."""
    if level > MAX_DEPTH:
        raise LimitError(f"nested more than {MAX_DEPTH} levels deep (aliases expanded)", node.start_mark)
    key = id(node)
    if key in open_nodes:
        raise LimitError("an alias refers to the node that holds it (a recursive alias)", node.start_mark)
    if key not in sizes:
        children = []
        if isinstance(node, SequenceNode):
            children = node.value
        elif isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        open_nodes.add(key)
        count, depth = 1, 0
        for child in children:
            child_count, child_depth = _expanded(child, level + 1, sizes, open_nodes)
            count, depth = count + child_count, max(depth, child_depth)
            if count > MAX_NODES:
                raise LimitError(
                    f"holds more than {MAX_NODES} values (aliases expanded); a preset needs far fewer",
                    node.start_mark,
                )
        open_nodes.discard(key)
        sizes[key] = (count, depth + 1)
    count, depth = sizes[key]
    if level - 1 + depth > MAX_DEPTH:
        raise LimitError(f"nested more than {MAX_DEPTH} levels deep (aliases expanded)", node.start_mark)
    return count, depth


def load_text(text: str):
    """The data of one YAML document, by SafeLoader; yaml.YAMLError (LimitError among them)
    where it is malformed, uses a tag or passes a limit."""
    loader = SafeLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def parse_yaml(text: str, source: str) -> dict:
    """The mapping a preset or sweep text holds; PresetError naming `source`, the line and the
    problem where the text is too long, malformed, tagged, past a limit or no mapping."""
    if not isinstance(text, str):
        raise PresetError([f"{source}: a preset is YAML text, got {type(text).__name__} {excerpt(text)}"])
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise PresetError([f"{source}: {size} bytes of YAML; at most {MAX_TEXT_BYTES} bytes are read"])
    try:
        data = load_text(text)
    except LimitError as error:
        mark = error.problem_mark
        where = f" at line {mark.line + 1}" if mark else ""
        raise PresetError([f"{source}: YAML refused{where}: {error.problem}"]) from None
    except yaml.constructor.ConstructorError as error:
        where = f" at line {error.problem_mark.line + 1}" if error.problem_mark else ""
        raise PresetError(
            [
                f"{source}: YAML tag not allowed{where}: {error.problem}; presets are "
                "plain data (mappings, lists, numbers, strings)"
            ]
        ) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise PresetError([f"{source}: malformed YAML{where}: {problem}"]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PresetError(
            [f"{source}: a preset is a mapping of keys to values, got {type(data).__name__} {excerpt(data)}"]
        )
    return data
