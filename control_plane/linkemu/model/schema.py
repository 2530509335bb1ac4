"""A file's schema (fields.Block) as a JSON Schema, for editors, and as
the reference tables of the docs: both made from the declarations the
readers use, so neither can drift from what linkemu accepts.

The JSON Schema checks each value's type and range, the required fields
and unknown ones; what depends on other fields (a field a mode needs, two
that exclude each other) is `linkemu check`'s."""

from .fields import Block, Either, Entries, Field, Kind, Names

JSON_SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def json_schema(block, title, schema_id):
    """The whole JSON Schema document of a file whose top level is `block`."""
    return {"$schema": JSON_SCHEMA_DRAFT, "$id": schema_id, "title": title,
            **node_json(block)}


def node_json(node):
    """The JSON Schema of one declared item."""
    if isinstance(node, Kind):
        return dict(node.json)
    if isinstance(node, Field):
        return _described(dict(node.kind.json), node.doc)
    if isinstance(node, Either):
        return _described({"anyOf": [dict(node.kind.json), node_json(node.block)]}, node.doc)
    if isinstance(node, Entries):
        return _described({"type": "array", "minItems": 1, "items": node_json(node.block)},
                          node.doc)
    if isinstance(node, Names):
        return _described({"type": "object", "additionalProperties": node_json(node.value)},
                          node.doc)
    schema = {"type": "object",
              "properties": {item.key: node_json(item) for item in node.items},
              "additionalProperties": False}
    if node.named:
        schema["patternProperties"] = {f"^(?:{pattern})$": node_json(item)
                                       for pattern, item in node.named}
    required = [item.key for item in node.items if item.required]
    if required:
        schema["required"] = required
    return _described(schema, node.doc)


def _described(schema, doc):
    if doc:
        schema["description"] = doc
    return schema


def reference(block, title):
    """Markdown: a table per mapping, depth first, each field's allowed
    values, default and meaning; a mapping with the same fields as one
    already shown (uplink's, downlink's) once."""
    lines = []
    _reference(block, title, lines, set())
    return "\n".join(lines).rstrip() + "\n"


def _reference(block, path, lines, shown, doc=None):
    shown.add(id(block.items))
    lines += [f"### `{path}`" if path else "### The top level", ""]
    if doc or block.doc:
        lines += [doc or block.doc, ""]
    lines += ["| field | allowed | default | meaning |", "|---|---|---|---|"]
    subsections = []
    for item in block.items + tuple(item for _, item in block.named):
        lines.append(_row(item))
        sub = _sub_block(item)
        # A mapping of the fields just shown (a TCP configuration's scopes)
        # needs no table of its own.
        if sub is not None and id(sub.items) not in shown and \
                not all(field in block.items for field in sub.items):
            key = item.key + _suffix(item)
            if isinstance(item, Field) and sub.key:   # a mapping a value may be
                key, doc = f"{key}[].{sub.key}", sub.doc
            else:
                doc = item.doc
            subsections.append((sub, f"{path}.{key}" if path else key, doc))
    lines.append("")
    for sub, sub_path, doc in subsections:
        if id(sub.items) not in shown:
            _reference(sub, sub_path, lines, shown, doc)


def _suffix(item):
    """How a path names the mappings below `item`: <name> for each of a
    Names, [] for a list's entries."""
    if isinstance(item, Names):
        return ".<name>" + ("[]" if isinstance(item.value, Entries) else "")
    return "[]" if isinstance(item, Entries) else ""


def _sub_block(item):
    if isinstance(item, Block):
        return item
    if isinstance(item, Field):
        return item.block
    if isinstance(item, (Either, Entries)):
        return item.block if item.block.items else None
    if isinstance(item, Names) and isinstance(item.value, Block):
        return item.value
    if isinstance(item, Names) and isinstance(item.value, Entries):
        return item.value.block
    return None


def _row(item):
    if isinstance(item, Field):
        allowed, default = item.kind.allowed, item.shown
    elif isinstance(item, Either):
        allowed, default = f"{item.kind.allowed}, or a mapping (below)", item.shown
    elif isinstance(item, Entries):
        allowed, default = "a list of mappings (below)", ""
    elif isinstance(item, Names):
        value = item.value
        what = (value.allowed if isinstance(value, Kind) else
                "a list of mappings (below)" if isinstance(value, Entries) else "a mapping (below)")
        allowed, default = f"names, each {what}", ""
    else:
        allowed, default = "a mapping (below)", ""
    if item.required:
        default = "required"
    doc = item.doc.replace("|", "\\|")
    return f"| `{item.key}` | {allowed} | {default} | {doc} |"
