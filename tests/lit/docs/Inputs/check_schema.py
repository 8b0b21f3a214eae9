"""Checks dynb interchange files against docs/schema (standard library only).

  check_schema.py validate --schemas DIR [--builtin] FILE...
      One line per file, sorted by file name: "VALID name", or
      "INVALID name at #/pointer ..." with the JSON pointers of the failing
      values (for .jsonl files "line N #/pointer"). The messages go to
      stderr. A .jsonl file is JSON Lines: its first non-blank line is checked
      against #/$defs/header, every later one against the instance-line
      schema; any other file is one document. Exit 0 if all are valid.
      With python3-jsonschema installed its result is used, and the built-in
      validator below must agree with it (else "DISAGREE"); --builtin uses
      the built-in one alone.
  check_schema.py extract LANG FILE.md
      Prints the first ```LANG fenced block of FILE.md.
  check_schema.py mutate GOOD.json OUTDIR
      Writes variants of GOOD.json (tests/lit/dynbc/Inputs/tiny.json): bad-*
      are rejected by the schema and dynbc, strict-* by the schema only,
      schema-only-* by dynbc only (what a schema cannot express).

The built-in validator implements the part of JSON Schema 2020-12 the dynb
schemas use and refuses any other keyword, so it never passes a value by
ignoring a rule.
"""
import argparse
import copy
import glob
import json
import os
import sys

DOCUMENT = "urn:dynb:interchange:v1"
HEADER = DOCUMENT + "#/$defs/header"
INSTANCE_LINE = "urn:dynb:interchange:v1:instance-line"

ANNOTATIONS = {"$schema", "$id", "$defs", "$comment", "title", "description",
               "default", "examples"}


class SchemaError(Exception):
    pass


def json_equal(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def has_type(x, name):
    if name == "object":
        return isinstance(x, dict)
    if name == "array":
        return isinstance(x, list)
    if name == "string":
        return isinstance(x, str)
    if name == "boolean":
        return isinstance(x, bool)
    if name == "null":
        return x is None
    if name == "number":
        return is_number(x)
    if name == "integer":
        return is_number(x) and (isinstance(x, int) or x.is_integer())
    raise SchemaError("unknown type %r" % name)


class Builtin:
    """type, required, properties, additionalProperties, items, prefixItems,
    minItems, maxItems, minLength, enum, const, minimum, maximum,
    exclusiveMinimum, oneOf, anyOf, allOf, not, if/then/else, and $ref to
    a JSON pointer in a schema known by its $id."""

    def __init__(self, schemas):
        self.by_id = {s["$id"]: s for s in schemas}

    def resolve(self, ref, root):
        base, _, frag = ref.partition("#")
        doc = self.by_id.get(base) if base else root
        if doc is None:
            raise SchemaError("cannot resolve $ref %r" % ref)
        target = doc
        for part in [p for p in frag.split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if part not in target:
                raise SchemaError("cannot resolve $ref %r" % ref)
            target = target[part]
        return target, doc

    def valid(self, s, x, root):
        return not self.errors(s, x, (), root)

    def errors(self, s, x, path, root):
        if s is True:
            return []
        if s is False:
            return [(path, "no value is allowed here")]
        out = []
        for key, v in s.items():
            if key in ANNOTATIONS or key in ("then", "else"):
                continue
            if key == "$ref":
                target, doc = self.resolve(v, root)
                out += self.errors(target, x, path, doc)
            elif key == "type":
                names = v if isinstance(v, list) else [v]
                if not any(has_type(x, n) for n in names):
                    out.append((path, "%s is not of type %s" % (json.dumps(x), v)))
            elif key == "required":
                if isinstance(x, dict):
                    out += [(path, "%r is a required property" % k)
                            for k in v if k not in x]
            elif key == "properties":
                if isinstance(x, dict):
                    for k, sub in v.items():
                        if k in x:
                            out += self.errors(sub, x[k], path + (k,), root)
            elif key == "additionalProperties":
                if isinstance(x, dict):
                    known = s.get("properties", {})
                    extra = [k for k in x if k not in known]
                    if v is False and extra:
                        out.append((path, "additional properties are not "
                                    "allowed (%s)" % ", ".join(map(repr, extra))))
                    elif v is not False:
                        for k in extra:
                            out += self.errors(v, x[k], path + (k,), root)
            elif key == "prefixItems":
                if isinstance(x, list):
                    for i, (sub, item) in enumerate(zip(v, x)):
                        out += self.errors(sub, item, path + (i,), root)
            elif key == "items":
                if isinstance(x, list):
                    start = len(s.get("prefixItems", []))
                    for i in range(start, len(x)):
                        out += self.errors(v, x[i], path + (i,), root)
            elif key == "minItems":
                if isinstance(x, list) and len(x) < v:
                    out.append((path, "%s has fewer than %d items" % (json.dumps(x), v)))
            elif key == "maxItems":
                if isinstance(x, list) and len(x) > v:
                    out.append((path, "%s has more than %d items" % (json.dumps(x), v)))
            elif key == "minLength":
                if isinstance(x, str) and len(x) < v:
                    out.append((path, "%r is shorter than %d" % (x, v)))
            elif key == "enum":
                if not any(json_equal(x, e) for e in v):
                    out.append((path, "%s is not one of %s" % (json.dumps(x), json.dumps(v))))
            elif key == "const":
                if not json_equal(x, v):
                    out.append((path, "%s was expected" % json.dumps(v)))
            elif key == "minimum":
                if is_number(x) and x < v:
                    out.append((path, "%s is less than the minimum of %s" % (x, v)))
            elif key == "maximum":
                if is_number(x) and x > v:
                    out.append((path, "%s is greater than the maximum of %s" % (x, v)))
            elif key == "exclusiveMinimum":
                if is_number(x) and x <= v:
                    out.append((path, "%s is not greater than %s" % (x, v)))
            elif key == "allOf":
                for sub in v:
                    out += self.errors(sub, x, path, root)
            elif key == "anyOf":
                if not any(self.valid(sub, x, root) for sub in v):
                    out.append((path, "%s is not valid under any of the given "
                                "schemas" % json.dumps(x)))
            elif key == "oneOf":
                n = sum(self.valid(sub, x, root) for sub in v)
                if n != 1:
                    out.append((path, "%s is valid under %d of the given schemas, "
                                "not exactly one" % (json.dumps(x), n)))
            elif key == "not":
                if self.valid(v, x, root):
                    out.append((path, "%s should not be valid under %s" % (json.dumps(x), json.dumps(v))))
            elif key == "if":
                branch = "then" if self.valid(v, x, root) else "else"
                if branch in s:
                    out += self.errors(s[branch], x, path, root)
            else:
                raise SchemaError("keyword %r is not implemented by the "
                                  "built-in validator" % key)
        return out

    def check(self, ref, x):
        return self.errors({"$ref": ref}, x, (), None)


class WithJsonschema:
    def __init__(self, schemas):
        import jsonschema
        import referencing
        from referencing.jsonschema import DRAFT202012
        self.cls = jsonschema.Draft202012Validator
        for s in schemas:
            self.cls.check_schema(s)
        self.registry = referencing.Registry().with_resources(
            [(s["$id"], DRAFT202012.create_resource(s)) for s in schemas])

    def check(self, ref, x):
        v = self.cls({"$ref": ref}, registry=self.registry)
        return [(tuple(e.absolute_path), e.message) for e in v.iter_errors(x)]


def pointer(path):
    return "#" + "".join("/" + str(p).replace("~", "~0").replace("/", "~1")
                         for p in path)


def reject_constant(name):
    raise ValueError("%s is not JSON" % name)


def parse(text):
    return json.loads(text, parse_constant=reject_constant)


def check_file(path, check):
    """Returns [(where, message)]; where is a pointer, maybe after a line."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not path.endswith(".jsonl"):
        try:
            doc = parse(text)
        except ValueError as e:
            return [("#", "invalid JSON: %s" % e)]
        return [(pointer(p), m) for p, m in check(DOCUMENT, doc)]
    found, header = [], True
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = parse(line)
        except ValueError as e:
            found.append(("line %d #" % n, "invalid JSON: %s" % e))
            continue
        ref = HEADER if header else INSTANCE_LINE
        header = False
        found += [("line %d %s" % (n, pointer(p)), m) for p, m in check(ref, value)]
    if header:
        found.append(("#", "the file has no header line"))
    return found


def validate(args):
    schemas = []
    for p in sorted(glob.glob(os.path.join(args.schemas, "*.schema.json"))):
        with open(p, encoding="utf-8") as f:
            schemas.append(json.load(f))
    if not schemas:
        print("no *.schema.json in %s" % args.schemas, file=sys.stderr)
        return 2
    builtin = Builtin(schemas)
    reference = None
    if not args.builtin:
        try:
            reference = WithJsonschema(schemas)
        except ImportError:
            pass
    print("validator: %s" % ("jsonschema, cross-checked with the built-in one"
                             if reference else "built-in"), file=sys.stderr)
    status = 0
    for path in sorted(args.files, key=os.path.basename):
        name = os.path.basename(path)
        ours = check_file(path, builtin.check)
        found = ours
        if reference:
            found = check_file(path, reference.check)
            if sorted({w for w, _ in found}) != sorted({w for w, _ in ours}):
                print("DISAGREE %s: jsonschema %s, built-in %s" % (
                    name, found, ours))
                status = 2
                continue
        for where, message in found:
            print("  %s: %s: %s" % (name, where, message), file=sys.stderr)
        if found:
            print("INVALID %s at %s" % (name, " ".join(sorted({w for w, _ in found}))))
            status = max(status, 1)
        else:
            print("VALID %s" % name)
    return status


def extract(args):
    fence = "```" + args.lang
    with open(args.file, encoding="utf-8") as f:
        lines = f.read().split("\n")
    start = lines.index(fence) + 1
    end = lines.index("```", start)
    print("\n".join(lines[start:end]))
    return 0


def mutate(args):
    with open(args.good, encoding="utf-8") as f:
        good = json.load(f)

    def write(name, edit):
        d = copy.deepcopy(good)
        edit(d)
        with open(os.path.join(args.outdir, name), "w") as f:
            json.dump(d, f)

    leaf = lambda d: d["model"]["modules"][0]
    # Rejected by the schema and by dynbc.
    write("bad-version.json", lambda d: d.update(dynb=2))
    write("bad-no-instances.json", lambda d: d.pop("instances"))
    write("bad-param-rank.json",
          lambda d: d["model"]["params"][0].update(shape=[2, 2, 2]))
    write("bad-param-zero.json",
          lambda d: d["model"]["params"][0].update(shape=[0, 4]))
    write("bad-param-dtype.json",
          lambda d: d["model"]["params"][0].update(dtype="f16"))
    write("bad-linear-weight.json", lambda d: leaf(d)["nodes"][1].pop("weight"))
    write("bad-module-outputs.json", lambda d: leaf(d).update(outputs=[]))
    write("bad-module-embedding.json", lambda d: leaf(d)["nodes"].append(
        {"op": "embedding", "table": "E", "index": 0}))
    write("bad-module-call.json", lambda d: leaf(d)["nodes"].append(
        {"op": "call", "module": "leaf", "inputs": [0]}))
    write("bad-instance-arg.json", lambda d: d["instances"][1]["nodes"].append(
        {"op": "arg", "shape": [4]}))
    write("bad-embedding-index.json",
          lambda d: d["instances"][0]["nodes"][0].pop("index"))
    write("bad-slice-size.json", lambda d: d["instances"][1]["nodes"].append(
        {"op": "slice", "inputs": [0], "offset": 0}))
    write("bad-add-arity.json", lambda d: d["instances"][1]["nodes"].append(
        {"op": "add", "inputs": [0]}))
    write("bad-ref.json",
          lambda d: d["instances"][1]["nodes"][1].update(inputs=["0"]))
    write("bad-op.json",
          lambda d: d["instances"][1]["nodes"][2].update(op="softmax"))
    with open(os.path.join(args.outdir, "bad-line.jsonl"), "w") as f:
        f.write(json.dumps({"dynb": 1, "model": good["model"]}) + "\n\n")
        f.write(json.dumps(good["instances"][0]) + "\n")
        bad = copy.deepcopy(good["instances"][1])
        bad["nodes"][0]["index"] = -1
        f.write(json.dumps(bad) + "\n")
    # Rejected by the schema only: the reader ignores unknown members.
    write("strict-member.json",
          lambda d: leaf(d)["nodes"][1].update(biass="W"))
    # Accepted by the schema, rejected by dynbc: what a schema cannot see.
    write("schema-only-forward-ref.json",
          lambda d: d["instances"][0]["nodes"][1].update(inputs=[4]))
    write("schema-only-shape.json", lambda d: d["instances"][1]["nodes"].extend(
        [{"op": "concat", "inputs": [0, 1]}, {"op": "add", "inputs": [0, 3]}]))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate")
    v.add_argument("--schemas", required=True)
    v.add_argument("--builtin", action="store_true")
    v.add_argument("files", nargs="+")
    e = sub.add_parser("extract")
    e.add_argument("lang")
    e.add_argument("file")
    m = sub.add_parser("mutate")
    m.add_argument("good")
    m.add_argument("outdir")
    args = ap.parse_args()
    return {"validate": validate, "extract": extract, "mutate": mutate}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
