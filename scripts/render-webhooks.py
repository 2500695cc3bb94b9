#!/usr/bin/env python3
"""Render landlord's webhook configurations from the chart into deploy/webhooks.json.

The chart's templates/webhooks.yaml is the one place the ValidatingWebhookConfiguration and the
MutatingWebhookConfiguration named landlord are written (rules, selectors, matchConditions,
failure policy, timeouts). deploy/webhooks.json is its rendering with the default values, by
the pinned Helm, as a v1 List:

- `kubectl apply -f deploy/webhooks.json` installs them without Helm (clientConfig points at
  the Service landlord in landlord-system; landlord writes the caBundle);
- landlord embeds the file at build time (CMakeLists.txt, cmake/embed.cmake) and
  registers the same objects itself when started with --webhook-url, with clientConfig.url
  set to <base><service path> (src/webhook/register.h).

The chart's own labels (release, version, chart) are replaced by app.kubernetes.io/name, so the
file does not change with the chart's version.

Usage:
  scripts/render-webhooks.py           check (make check): exit 1, with a diff, when
                                       deploy/webhooks.json is not the chart's rendering
  scripts/render-webhooks.py --write   rewrite deploy/webhooks.json
Without the pinned Helm built (tests/cluster/build-helm.sh) the check says so and passes, as
scripts/chart-files.sh does.
"""

import difflib
import json
import os
import pathlib
import subprocess
import sys

import yaml

REPO = pathlib.Path(__file__).resolve().parents[1]
OUT = REPO / "deploy" / "webhooks.json"
CHART = REPO / "deploy" / "chart"


def helm_binary():
    version = None
    for line in (REPO / "tests/cluster/versions.env").read_text().splitlines():
        if line.startswith("HELM_VERSION="):
            version = line.split("=", 1)[1].strip()
    base = os.environ.get("LANDLORD_HELM_BIN",
                          os.path.expanduser(f"~/.cache/landlord/helm/{version}"))
    return pathlib.Path(base) / "helm"


def render(helm):
    out = subprocess.run([str(helm), "template", "landlord", str(CHART), "-n", "landlord-system",
                          "-s", "templates/webhooks.yaml"],
                         capture_output=True, text=True, check=True).stdout
    items = []
    for doc in yaml.safe_load_all(out):
        if not doc:
            continue
        doc["metadata"]["labels"] = {"app.kubernetes.io/name": "landlord"}
        items.append(doc)
    items.sort(key=lambda d: d["kind"] != "ValidatingWebhookConfiguration")
    lst = {"apiVersion": "v1", "kind": "List", "items": items}
    return json.dumps(lst, indent=1) + "\n"


def main():
    helm = helm_binary()
    if not helm.is_file():
        if "--write" in sys.argv:
            sys.exit(f"render-webhooks: {helm} is not built: run tests/cluster/build-helm.sh")
        print(f"render-webhooks: {helm} is not built; deploy/webhooks.json not checked")
        return 0
    want = render(helm)
    if "--write" in sys.argv:
        OUT.write_text(want)
        print(f"render-webhooks: wrote {OUT.relative_to(REPO)}")
        return 0
    have = OUT.read_text() if OUT.exists() else ""
    if have != want:
        sys.stderr.writelines(difflib.unified_diff(
            have.splitlines(True), want.splitlines(True), "deploy/webhooks.json", "chart"))
        print("render-webhooks: deploy/webhooks.json differs from the chart's webhooks "
              "(run scripts/render-webhooks.py --write, then rebuild landlord)", file=sys.stderr)
        return 1
    print("render-webhooks: deploy/webhooks.json is the chart's rendering")
    return 0


if __name__ == "__main__":
    sys.exit(main())
