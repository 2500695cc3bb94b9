#!/usr/bin/env python3
"""Render landlord's RBAC for the ClusterRoles a LandlordConfig maps.

landlord may bind (hand out in tenants' RoleBindings) only the ClusterRoles its LandlordConfig maps
in spec.tenantRoles, and its own ClusterRole says so in one rule: bind on clusterroles, by
resourceNames. This script computes that list, and is the one place it is computed:

- the default roles come from the LandlordConfig CRD (deploy/crds/landlordconfigs.landlord.dev.yaml,
  the schema defaults of spec.tenantRoles.default, which the API server fills in); landlord's own
  defaults (lcfg_defaults() in src/tenancy/landlordconfig.c) are the same names, which the e2e
  suite checks against what landlord persists;
- a LandlordConfig's roles are its tenantRoles.default roles (empty or unset: the default) and
  every role a tenantRoles.custom entry names, distinct and sorted;
- deploy/rbac.yaml holds the rendering for the defaults (`--check` in `make check` keeps it so).

The coming Helm chart must render the bind rule from the same values as its LandlordConfig.

Usage:
  scripts/render-rbac.py [CONFIG]          deploy/rbac.yaml with the bind rule for CONFIG's roles
                                           (the defaults without CONFIG), on stdout: pipe it to
                                           `kubectl apply -f -`
  scripts/render-rbac.py --rule [CONFIG]   only the bind rule (to paste into another ClusterRole)
  scripts/render-rbac.py --roles [CONFIG]  only the role names, one a line
  scripts/render-rbac.py --check           exit 1 unless deploy/rbac.yaml is the defaults'
                                           rendering and its ClusterRole landlord holds no
                                           escalate, no "*" and no bind beyond that rule
  scripts/render-rbac.py --write           rewrite deploy/rbac.yaml's bind rule for the defaults

CONFIG is a YAML file holding the LandlordConfig named landlord (other documents in it are
skipped), e.g. samples/landlordconfig.yaml.
"""

import argparse
import difflib
import pathlib
import re
import sys

import yaml

REPO = pathlib.Path(__file__).resolve().parents[1]
RBAC = REPO / "deploy" / "rbac.yaml"
CRD = REPO / "deploy" / "crds" / "landlordconfigs.landlord.dev.yaml"
KEYS = ("owner", "editor", "viewer")
CLUSTERROLE = "landlord"
# The bind rule, as deploy/rbac.yaml writes it: the verbs line, then the resourceNames line.
BIND_RULE = re.compile(r"^(?P<indent> *)verbs: \[bind\]\n(?P=indent)resourceNames: \[[^\]\n]*\]$",
                       re.MULTILINE)
PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def default_roles():
    """{owner, editor, viewer} -> ClusterRole, the LandlordConfig CRD's schema defaults."""
    crd = yaml.safe_load(CRD.read_text())
    for version in crd["spec"]["versions"]:
        props = (version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                 ["tenantRoles"]["properties"]["default"]["properties"])
        return {k: props[k]["default"] for k in KEYS}
    raise SystemExit(f"{CRD}: no version")


def load_config(path):
    """The spec of the LandlordConfig named landlord in the YAML file @path."""
    for doc in yaml.safe_load_all(pathlib.Path(path).read_text()):
        if (isinstance(doc, dict) and doc.get("kind") == "LandlordConfig"
                and (doc.get("metadata") or {}).get("name") == "landlord"):
            return doc.get("spec") or {}
    raise SystemExit(f"{path}: no LandlordConfig named landlord")


def roles_of(spec):
    """The distinct ClusterRoles @spec (a LandlordConfig's spec, {} for the defaults) maps,
    sorted, as landlord reads them (src/tenancy/landlordconfig.c, lcfg_role_names())."""
    tenant_roles = (spec or {}).get("tenantRoles") or {}
    dflt = tenant_roles.get("default") or {}
    builtin = default_roles()
    names = {dflt.get(k) or builtin[k] for k in KEYS}
    for entry in tenant_roles.get("custom") or []:
        names.update(entry[k] for k in KEYS if entry.get(k))
    return sorted(names)


def flow(names):
    """A YAML flow list; names that YAML would not read back as themselves are quoted."""
    return "[" + ", ".join(n if PLAIN.match(n) else '"' + n.replace('\\', '\\\\')
                           .replace('"', '\\"') + '"' for n in names) + "]"


def rule(names):
    return ("- apiGroups: [rbac.authorization.k8s.io]\n  resources: [clusterroles]\n"
            f"  verbs: [bind]\n  resourceNames: {flow(names)}\n")


def render(text, names):
    """deploy/rbac.yaml's text with its bind rule listing @names."""
    found = BIND_RULE.findall(text)
    if len(found) != 1:
        raise SystemExit(f"{RBAC}: expected one 'verbs: [bind]' line followed by its "
                         f"'resourceNames: [...]' line, found {len(found)}")
    return BIND_RULE.sub(lambda m: f"{m['indent']}verbs: [bind]\n{m['indent']}resourceNames: "
                         f"{flow(names)}", text)


def lint(text, names):
    """Problems with the ClusterRole landlord in @text: it must hold no escalate, no "*", and
    bind only on clusterroles, by resourceNames, exactly @names."""
    docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    role = [d for d in docs if d.get("kind") == "ClusterRole"
            and d["metadata"]["name"] == CLUSTERROLE]
    if len(role) != 1:
        return [f"expected one ClusterRole {CLUSTERROLE}, found {len(role)}"]
    problems, binds = [], []
    for r in role[0].get("rules") or []:
        words = [*r.get("verbs", []), *r.get("resources", []), *r.get("apiGroups", [])]
        if "*" in words or "escalate" in r.get("verbs", []):
            problems.append(f"a rule holds escalate or '*': {r}")
        if "bind" in r.get("verbs", []):
            binds.append(r)
    ok = (len(binds) == 1 and binds[0].get("verbs") == ["bind"]
          and binds[0].get("resources") == ["clusterroles"]
          and binds[0].get("apiGroups") == ["rbac.authorization.k8s.io"]
          and binds[0].get("resourceNames") == names)
    if not ok:
        problems.append(f"expected one rule: bind on clusterroles {names} by resourceNames; "
                        f"found {binds}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("Usage:", 1)[1])
    ap.add_argument("config", nargs="?", help="a YAML file with the LandlordConfig landlord")
    mode = ap.add_mutually_exclusive_group()
    for flag in ("--rule", "--roles", "--check", "--write"):
        mode.add_argument(flag, action="store_true")
    args = ap.parse_args()
    if (args.check or args.write) and args.config:
        ap.error("--check and --write are about the defaults: no CONFIG")
    names = roles_of(load_config(args.config) if args.config else {})
    text = RBAC.read_text()
    if args.roles:
        print("\n".join(names))
    elif args.rule:
        sys.stdout.write(rule(names))
    elif args.check:
        want = render(text, names)
        problems = lint(text, names)
        if want != text:
            problems.append("the bind rule is not the defaults' (scripts/render-rbac.py "
                            "--write rewrites it):\n" + "".join(difflib.unified_diff(
                                text.splitlines(True), want.splitlines(True),
                                str(RBAC), "rendered")))
        for p in problems:
            print(f"{RBAC.relative_to(REPO)}: {p}", file=sys.stderr)
        return 1 if problems else 0
    elif args.write:
        RBAC.write_text(render(text, names))
    else:
        sys.stdout.write(render(text, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
