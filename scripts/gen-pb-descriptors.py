#!/usr/bin/env python3
"""Generate src/proxy/pb_descriptors.c: the Kubernetes protobuf schema that src/proxy/pbconv.c
walks (the messages, their fields, and which message each apiVersion/kind decodes as).

Read from the Go module cache (`go env GOMODCACHE`, else ~/go/pkg/mod):
  - every generated.proto of k8s.io/api@API_VERSION and of k8s.io/apimachinery@API_VERSION
    (pkg/, without the test group): messages and fields;
  - the Go sources beside them: each field's JSON name (the struct tag; it equals the proto
    name but for the EXCEPTIONS this script prints with --exceptions) and which fields are
    inline in JSON (`json:",inline"`, and the JSON scalars and lists kept as messages in
    protobuf: IntOrString, Quantity, `type X []string`);
  - register.go (and doc.go's +groupName) of each group version: the kinds it registers, plus
    the meta/v1 options kinds and WatchEvent that metav1.AddToGroupVersion adds to every one.
Only messages reachable from a kind are kept.

  scripts/gen-pb-descriptors.py            rewrite src/proxy/pb_descriptors.c
  scripts/gen-pb-descriptors.py --check    fail when it differs from what would be written;
                                           skip (exit 0) when the module cache lacks the versions
  scripts/gen-pb-descriptors.py --exceptions   list the fields whose JSON name is not the proto one
The output is formatted with clang-format-14, as the rest of the tree.
"""
import argparse
import os
import re
import subprocess
import sys

API_VERSION = "v0.33.13"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "src", "proxy", "pb_descriptors.c")

SCALARS = {
    "string": "PB_STRING", "bytes": "PB_BYTES",
    "int32": "PB_VARINT", "int64": "PB_VARINT", "uint32": "PB_VARINT", "uint64": "PB_VARINT",
    "sint32": "PB_VARINT", "sint64": "PB_VARINT", "bool": "PB_VARINT",
    "fixed64": "PB_FIXED64", "sfixed64": "PB_FIXED64", "double": "PB_FIXED64",
    "fixed32": "PB_FIXED32", "sfixed32": "PB_FIXED32", "float": "PB_FIXED32",
}
# Messages that are a scalar in JSON: their string field stands for the field that holds them.
JSON_SCALARS = {
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "strVal",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "string",
}
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
GO_ALIASES = {"metav1": META}


def modcache():
    try:
        out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True,
                             check=True).stdout.strip()
        if out:
            return out
    except (OSError, subprocess.CalledProcessError):
        pass
    return os.path.expanduser("~/go/pkg/mod")


def proto_files(cache):
    api = os.path.join(cache, "k8s.io", "api@" + API_VERSION)
    mach = os.path.join(cache, "k8s.io", "apimachinery@" + API_VERSION)
    if not (os.path.isdir(api) and os.path.isdir(mach)):
        return None, None, None
    files = []
    for top in (api, os.path.join(mach, "pkg")):
        for d, _, names in os.walk(top):
            if "generated.proto" in names and "testapigroup" not in d:
                files.append(os.path.join(d, "generated.proto"))
    return sorted(files), api, mach


FIELD_RE = re.compile(r"^(optional|repeated|required)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;$")
MAP_RE = re.compile(r"^map<\s*(\w+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;$")


def parse_proto(path):
    """(package, {message: [(label, type, name, number, maptypes)]}) of one generated.proto."""
    pkg, msgs, cur = None, {}, None
    text = re.sub(r"/\*.*?\*/", "", open(path, encoding="utf-8").read(), flags=re.S)
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if line.startswith("package "):
            pkg = line[len("package "):].rstrip(";").strip()
        elif line.startswith("message "):
            if cur is not None:
                sys.exit(f"{path}: nested message {line}")
            cur = line.split()[1]
            msgs[cur] = []
        elif line == "}":
            cur = None
        elif cur is not None:
            m = FIELD_RE.match(line)
            if m:
                msgs[cur].append((m[1], m[2], m[3], int(m[4]), None))
                continue
            m = MAP_RE.match(line)
            if not m:
                sys.exit(f"{path}: cannot read {line!r} in message {cur}")
            msgs[cur].append(("map", None, m[3], int(m[4]), (m[1], m[2])))
        elif not line.startswith(("syntax", "import", "option")):
            sys.exit(f"{path}: cannot read {line!r}")
    return pkg, msgs


TAG_RE = re.compile(r'(\w+):"([^"]*)"')


def go_fields(pkgdir):
    """The Go side of a package: {(struct, proto name): (json name, inline)}, the names of
    `type X []T` slices, and {X: (proto package, Y)} for `type X otherpkg.Y`."""
    fields, slices, defs, imports = {}, set(), {}, {}
    for name in sorted(os.listdir(pkgdir)):
        if (not name.endswith(".go") or name.endswith("_test.go") or name == "generated.pb.go"
                or name.startswith("zz_generated") or "swagger_doc" in name):
            continue
        struct = None
        for line in open(os.path.join(pkgdir, name), encoding="utf-8"):
            m = re.match(r'^\s*(\w+) "(k8s\.io/(?:api|apimachinery)/[\w/]+)"', line)
            if m:
                imports[m[1]] = m[2].replace("/", ".")
            m = re.match(r"^type (\w+) (\w+)\.(\w+)\s*$", line)
            if m and m[2] in imports:
                defs[m[1]] = (imports[m[2]], m[3])
            m = re.match(r"^type (\w+) struct \{", line)
            if m:
                struct = m[1]
                continue
            m = re.match(r"^type (\w+) \[\]\w+\s*$", line)
            if m:
                slices.add(m[1])
            if line.startswith("}"):
                struct = None
            if struct is None or "`" not in line:
                continue
            tags = dict(TAG_RE.findall(line.split("`")[1]))
            if "protobuf" not in tags or tags["protobuf"] == "-":
                continue
            m = re.search(r"name=(\w+)", tags["protobuf"])
            gofield = line.split()[0].rsplit(".", 1)[-1].lstrip("*")
            pname = m[1] if m else gofield[0].lower() + gofield[1:]
            jparts = tags.get("json", "").split(",")
            jname = jparts[0] if "json" in tags else gofield
            fields[(struct, pname)] = (jname, jname == "" and "inline" in jparts[1:])
    return fields, slices, defs


def group_of(pkgdir, default):
    doc = os.path.join(pkgdir, "doc.go")
    if os.path.exists(doc):
        m = re.search(r"^// \+groupName=(\S*)", open(doc, encoding="utf-8").read(), re.M)
        if m:
            return m[1]
    return default


def registered(pkgdir):
    """The kinds register.go's addKnownTypes registers: (package or None, name) pairs."""
    text = open(os.path.join(pkgdir, "register.go"), encoding="utf-8").read()
    kinds = []
    for block in re.findall(r"AddKnownTypes\(\s*SchemeGroupVersion\s*,(.*?)\)\s*\n", text, re.S):
        for alias, name in re.findall(r"&(?:(\w+)\.)?(\w+)\{\}", block):
            kinds.append((GO_ALIASES[alias] if alias else None, name))
    return kinds, "AddToGroupVersion" in text


def meta_kinds(mach):
    """meta/v1: the options kinds every group version gets, and meta.k8s.io/v1's own."""
    text = open(os.path.join(mach, "pkg/apis/meta/v1/register.go"), encoding="utf-8").read()
    options = re.findall(r"&(\w+)\{\}", re.search(r"optionsTypes = \[\]runtime.Object\{(.*?)\}\n",
                                                  text, re.S)[1])
    own = re.findall(r"&(\w+)\{\}", re.search(r"func AddMetaToScheme.*?\n}", text, re.S)[0])
    unversioned = re.findall(r"&(\w+)\{\}", re.search(
        r"AddUnversionedTypes\(Unversioned,(.*?)\)", text, re.S)[1])
    return options + ["WatchEvent"], own + options, unversioned


class Schema:
    def __init__(self):
        self.msgs = {}     # full name -> [(label, type, name, number, maptypes)]
        self.pkgdir = {}   # package -> directory
        self.go = {}       # package -> (fields, slices)

    def resolve(self, pkg, typ):
        if typ in SCALARS:
            return typ
        full = typ[1:] if typ.startswith(".") else f"{pkg}.{typ}"
        if full not in self.msgs:
            sys.exit(f"unknown type {typ} in {pkg}")
        return full


def load(cache):
    files, api, mach = proto_files(cache)
    if files is None:
        return None
    s = Schema()
    for path in files:
        pkg, msgs = parse_proto(path)
        s.pkgdir[pkg] = os.path.dirname(path)
        s.go[pkg] = go_fields(os.path.dirname(path))
        for name, fields in msgs.items():
            s.msgs[f"{pkg}.{name}"] = fields
    s.kinds = kinds(s, api, mach)
    return s


def kinds(s, api, mach):
    """{(apiVersion, kind): message} for every kind of every group version."""
    every, meta_own, unversioned = meta_kinds(mach)
    out = {}
    for pkg, d in s.pkgdir.items():
        if not pkg.startswith("k8s.io.api.") or not os.path.exists(os.path.join(d, "register.go")):
            continue
        rel = os.path.relpath(d, api).split(os.sep)
        group, version = group_of(d, rel[0]), rel[1]
        gv = f"{group}/{version}" if group else version
        local, add_meta = registered(d)
        for p, name in local:
            out[(gv, name)] = f"{p or pkg}.{name}"
        for name in every if add_meta else []:
            out[(gv, name)] = f"{META}.{name}"
    for name in meta_own:
        out[("meta.k8s.io/v1", name)] = f"{META}.{name}"
    for name in unversioned:
        out[("v1", name)] = f"{META}.{name}"
    # Kinds without a message (meta/v1's Table, TableOptions) have no protobuf form.
    return {key: msg for key, msg in out.items() if msg in s.msgs}


def reachable(s):
    seen, todo = set(), sorted(set(s.kinds.values()))
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        pkg = m.rsplit(".", 1)[0]
        for label, typ, _, _, mt in s.msgs[m]:
            t = mt[1] if label == "map" else typ
            r = s.resolve(pkg, t)
            if r not in SCALARS:
                todo.append(r)
    return sorted(seen)


def field_info(s, msg, fname):
    """(JSON name, inline) of field @fname of @msg."""
    pkg, short = msg.rsplit(".", 1)
    fields, slices, defs = s.go[pkg]
    if (short, fname) not in fields and short in defs:  # type X otherpkg.Y
        return field_info(s, ".".join(defs[short]), fname)
    if msg in JSON_SCALARS:  # custom JSON: the proto names, the string one inline
        return fname, JSON_SCALARS[msg] == fname
    if short in slices and fname == "items" and len(s.msgs[msg]) == 1:
        return fname, True
    jname, inline = fields.get((short, fname), (fname, False))
    if jname == "-" or jname == "":
        jname = fname
    return jname, inline


def exceptions(s, keep):
    out = []
    for msg in keep:
        for label, typ, name, num, _ in s.msgs[msg]:
            jname, inline = field_info(s, msg, name)
            pkg, short = msg.rsplit(".", 1)
            raw = s.go[pkg][0].get((short, name))
            if inline:
                out.append(f"{msg}.{name}: inline in JSON (no path segment)")
            elif raw and raw[0] == "-":
                out.append(f"{msg}.{name}: not in JSON (json:\"-\"), path segment {name!r}")
            elif jname != name:
                out.append(f"{msg}.{name}: JSON name {jname!r} (used in paths)")
    return out


def depth(s, keep):
    """The deepest message nesting a kind reaches (the schema has no cycles: checked)."""
    memo, stack = {}, set()

    def d(m):
        if m in memo:
            return memo[m]
        if m in stack:
            sys.exit(f"recursive message {m}: pbconv.c's depth bound must be revisited")
        stack.add(m)
        pkg, best = m.rsplit(".", 1)[0], 0
        for label, typ, _, _, mt in s.msgs[m]:
            r = s.resolve(pkg, mt[1] if label == "map" else typ)
            if r not in SCALARS:
                best = max(best, d(r) + (2 if label == "map" else 1))
        stack.discard(m)
        memo[m] = best
        return best

    return max(d(m) for m in set(s.kinds.values())) + 1


class Pool:
    def __init__(self):
        self.text, self.at = [], {}
        self.size = 0

    def add(self, s):
        if s not in self.at:
            self.at[s] = self.size
            self.text.append(s)
            self.size += len(s.encode()) + 1
        return self.at[s]


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '\\0"'


def render(s):
    keep = reachable(s)
    index = {m: i for i, m in enumerate(keep)}
    pool = Pool()
    packages = sorted({m.rsplit(".", 1)[0] for m in keep})
    pkg_index = {p: i for i, p in enumerate(packages)}
    for p in packages:
        pool.add(p)
    msg_rows, field_rows = [], []
    for m in keep:
        pkg, short = m.rsplit(".", 1)
        fields = sorted(s.msgs[m], key=lambda f: f[3])
        msg_rows.append((pool.add(short), pkg_index[pkg], len(field_rows), len(fields), m))
        for label, typ, name, num, mt in fields:
            jname, inline = field_info(s, m, name)
            flags = ["PB_F_REPEATED"] if label == "repeated" else []
            flags += ["PB_F_INLINE"] if inline else []
            ref, val = 0, "0"
            if label == "map":
                kind, r = "PB_MAP", s.resolve(pkg, mt[1])
                val = SCALARS[r] if r in SCALARS else "PB_MESSAGE"
                if mt[0] != "string" or val not in ("PB_STRING", "PB_BYTES", "PB_MESSAGE"):
                    # pbconv.c reads every entry's key and value as length-delimited, as Go does
                    sys.exit(f"{m}.{name}: a map<{mt[0]}, {mt[1]}>: pbconv.c takes string keys "
                             "and length-delimited values only")
                ref = 0 if r in SCALARS else index[r]
            else:
                r = s.resolve(pkg, typ)
                kind = SCALARS[r] if r in SCALARS else "PB_MESSAGE"
                ref = 0 if r in SCALARS else index[r]
            if num > 255:
                sys.exit(f"{m}.{name}: field number {num} over 255")
            field_rows.append((pool.add(jname), num, kind, val, "|".join(flags) or "0", ref,
                               f"{m.rsplit('.', 1)[1]}.{jname}"))
    gvks = sorted(s.kinds.items())
    gvk_rows = [(pool.add(gv), pool.add(k), index[m], f"{gv} {k}") for (gv, k), m in gvks]
    if pool.size > 0xffff:
        sys.exit(f"string pool of {pool.size} bytes: pb_field.name is 16 bits")
    return keep, msg_rows, field_rows, gvk_rows, pool, packages, depth(s, keep)


HEADER = """\
/*
 * pb_descriptors.c - GENERATED by scripts/gen-pb-descriptors.py from the generated.proto files
 * (and the Go sources beside them) of k8s.io/api@{ver} and k8s.io/apimachinery@{ver}.
 * Do not edit: change the script and run it (it reads the Go module cache; `go mod download
 * k8s.io/api@{ver} k8s.io/apimachinery@{ver}` fills it). pb_descriptors.h says what the
 * tables hold.
 *
 * {nmsg} messages, {nfield} fields, {ngvk} kinds, {npool} bytes of names; deepest nesting {depth}.
 */
#include "proxy/pb_descriptors.h"

"""


def emit(s):
    keep, msg_rows, field_rows, gvk_rows, pool, packages, dep = render(s)
    out = [HEADER.format(ver=API_VERSION, nmsg=len(msg_rows), nfield=len(field_rows),
                         ngvk=len(gvk_rows), npool=pool.size, depth=dep)]
    out.append("/* Every name, NUL-terminated, at the offsets the tables give. */\n")
    out.append("const char pb_pool[] =\n")
    out.extend(f"        {c_string(t)}\n" for t in pool.text)
    out.append("        ;\n\n")
    out.append("const uint16_t pb_packages[] = {\n")
    out.extend(f"        {pool.at[p]}, /* {p} */\n" for p in packages)
    out.append("};\n\n")
    out.append("const struct pb_message pb_messages[] = {\n")
    for name, pkg, first, n, full in msg_rows:
        out.append(f"        {{{name}, {first}, {pkg}, {n}}}, /* {full} */\n")
    out.append("};\n\n")
    out.append("const struct pb_field pb_fields[] = {\n")
    for name, num, kind, val, flags, ref, what in field_rows:
        out.append(f"        {{{name}, {num}, {kind}, {val}, {flags}, {ref}}}, /* {what} */\n")
    out.append("};\n\n")
    out.append("const struct pb_gvk pb_gvks[] = {\n")
    for gv, k, m, what in gvk_rows:
        out.append(f"        {{{gv}, {k}, {m}}}, /* {what} */\n")
    out.append("};\n\n")
    out.append("const size_t pb_messages_len = sizeof(pb_messages) / sizeof(pb_messages[0]);\n")
    out.append("const size_t pb_gvks_len = sizeof(pb_gvks) / sizeof(pb_gvks[0]);\n")
    out.append(f"const unsigned pb_schema_depth = {dep};\n")
    text = "".join(out)
    try:
        return subprocess.run(["clang-format-14", "--assume-filename=" + OUT], input=text,
                              capture_output=True, text=True, check=True,
                              cwd=ROOT).stdout, (keep, msg_rows, field_rows, gvk_rows, pool)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"gen-pb-descriptors: clang-format-14 failed: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--exceptions", action="store_true")
    ap.add_argument("--modcache", default=None)
    args = ap.parse_args()
    s = load(args.modcache or modcache())
    if s is None:
        msg = f"k8s.io/api and k8s.io/apimachinery {API_VERSION} are not in the module cache"
        if args.check:
            print(f"gen-pb-descriptors: {msg}: check skipped")
            return 0
        sys.exit(f"gen-pb-descriptors: {msg}")
    if args.exceptions:
        print("\n".join(exceptions(s, reachable(s))))
        return 0
    text, (keep, msgs, fields, gvks, pool) = emit(s)
    if args.check:
        old = open(OUT, encoding="utf-8").read() if os.path.exists(OUT) else ""
        if old != text:
            print(f"gen-pb-descriptors: {os.path.relpath(OUT, ROOT)} is stale: run "
                  "scripts/gen-pb-descriptors.py", file=sys.stderr)
            return 1
        print(f"gen-pb-descriptors: {os.path.relpath(OUT, ROOT)} is current")
        return 0
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    # sizeof: struct pb_message 6, pb_field 8, pb_gvk 6, pb_packages' entries 2
    size = pool.size + 2 * len({m[1] for m in msgs}) + 6 * len(msgs) + 8 * len(fields) \
        + 6 * len(gvks)
    print(f"gen-pb-descriptors: {len(msgs)} messages, {len(fields)} fields, {len(gvks)} kinds, "
          f"{pool.size} bytes of names, about {size} bytes in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
