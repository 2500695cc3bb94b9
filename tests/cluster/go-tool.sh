# Sourced by build-helm.sh and build-registry.sh: one command of a pinned Go module built from
# the Go module proxy into a cache directory outside the repository.
#
#   go_tool_build NAME MODULE VERSION PACKAGE OUT LDFLAGS ABOUT
#     builds PACKAGE@VERSION into OUT.partial (GOBIN). The module must have no replace
#     directives, so `go install module@version` builds exactly what its go.mod and go.sum pin
#     (checked against the checksum database). A local Go older than the module's go directive
#     is swapped for that toolchain from the proxy (GOTOOLCHAIN=go<version>). ABOUT says how long
#     a build takes, for the log.
#   go_tool_install NAME OUT
#     moves OUT.partial to OUT once the caller has checked what it built, so an interrupted or
#     wrong build never leaves a binary where the tests look.

go_tool_build() {
	local name=$1 mod=$2 version=$3 pkg=$4 out=$5 ldflags=$6 about=$7 need have
	command -v go >/dev/null || { echo "build-$name: Go is required (see README)" >&2; exit 1; }
	export CGO_ENABLED=0 GOFLAGS=
	need=$(GOTOOLCHAIN=local go mod download -json "$mod@$version" | python3 -c '
import json, re, sys
d = json.load(sys.stdin)
if d.get("Error"):
    sys.exit(d["Error"])
print(re.search(r"^go (\S+)", open(d["GoMod"]).read(), re.M).group(1))')
	have=$(GOTOOLCHAIN=local go env GOVERSION)
	have=${have#go}
	if [[ $(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1) != "$need" ]]; then
		echo "build-$name: Go $have is older than $mod's go $need; using toolchain go$need" \
			"from the proxy"
		export GOTOOLCHAIN=go$need
	else
		export GOTOOLCHAIN=local
	fi
	go_tool_started=$SECONDS
	echo "Building $name $version from the Go module proxy into $out ($about on 2 cores)."
	rm -rf "$out.partial"
	mkdir -p "$out.partial"
	GOBIN="$out.partial" go install -trimpath -buildvcs=false -ldflags="$ldflags" "$pkg@$version"
}

go_tool_install() {
	local name=$1 out=$2
	rm -rf "$out" && mv "$out.partial" "$out"
	echo "[build-$name] done in $((SECONDS - go_tool_started))s: $out"
}
