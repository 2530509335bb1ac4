"""Reading the user's files: regular files of bounded size, UTF-8 text, and
YAML without a key given twice or aliases that expand beyond reason.

Every profile, experiment and grid base is read with load_yaml; a problem is
a ValueError whose message leaves naming the file to the caller (YAML
positions name it already)."""

import io
import os
import stat

import yaml

from .fields import shown

MAX_YAML_BYTES = 1 << 20    # profiles and experiment files are a few kB
MAX_YAML_NODES = 100_000    # values of a document, every alias expanded


def read_text(path, limit):
    """The text of the regular file `path` (not a device or a pipe, which
    may never end), of at most `limit` bytes."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ValueError("cannot read: not a regular file")
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as err:
        raise ValueError(f"cannot read: {err.strerror}") from None
    if len(data) > limit:
        raise ValueError(f"too large; allowed at most {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"not UTF-8 text: byte {err.start} is {data[err.start]:#x}") from None


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (the last
    would win unnoticed) and documents that expand beyond MAX_YAML_NODES."""

    def compose_document(self):
        self._sizes = {}   # id(node) -> its number of nodes, aliases expanded
        return super().compose_document()

    def compose_node(self, parent, index):
        mark = self.peek_event().start_mark
        alias = self.check_event(yaml.AliasEvent)
        node = super().compose_node(parent, index)
        if alias:
            if id(node) not in self._sizes:
                raise yaml.composer.ComposerError(
                    None, None, "an alias inside its own anchor: a value without end", mark)
            size = self._sizes[id(node)]
        else:
            if isinstance(node, yaml.MappingNode):
                children = [n for pair in node.value for n in pair]
            else:
                children = node.value if isinstance(node, yaml.SequenceNode) else []
            size = self._sizes[id(node)] = 1 + sum(self._sizes[id(c)] for c in children)
        if size > MAX_YAML_NODES:
            raise yaml.composer.ComposerError(
                None, None, f"expands to more than {MAX_YAML_NODES} values (an alias "
                "repeats what it names)", mark)
        return node

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as err:
            # An integer too long for Python, a date out of range.
            kind = node.tag.rsplit(":", 1)[-1]
            raise yaml.constructor.ConstructorError(
                None, None, f"{shown(node.value)}: not a valid {kind}: "
                f"{str(err).split(';')[0]}", node.start_mark) from None

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:
                    continue  # unhashable: the base class says so
                if first is not key_node:
                    raise yaml.constructor.ConstructorError(
                        "while reading a mapping", node.start_mark,
                        f"{shown(key)} is given twice (first on line "
                        f"{first.start_mark.line + 1}); give each key once", key_node.start_mark)
        return super().construct_mapping(node, deep)


def load_yaml(path):
    """The YAML document of file `path`."""
    stream = io.StringIO(read_text(path, MAX_YAML_BYTES))
    stream.name = str(path)   # YAML positions name the file
    try:
        loader = _Loader(stream)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        raise ValueError(f"not valid YAML: {err}") from None
