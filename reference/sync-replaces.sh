#!/usr/bin/env bash
# Rewrites the replace block of go.mod from the one in k8s.io/kubernetes' own go.mod at the
# version go.mod requires. Upstream points every staging module (k8s.io/api, apiserver,
# client-go, kubectl, ...) at ./staging/src/..., which a module requiring k8s.io/kubernetes
# does not have; each becomes the published module of the same release (v1.37.2 -> v0.37.2).
# Run after changing the required version, then `go mod tidy`.
set -euo pipefail
cd "$(dirname "$0")"
version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
staging_version="v0.${version#v1.}"
upstream_mod=$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
modules=$(sed -n '/^replace (/,/^)/s#^\t\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$upstream_mod")
[ -n "$modules" ] || { echo "no staging replaces found in $upstream_mod" >&2; exit 1; }
args=()
for module in $modules; do
    args+=("-replace=${module}=${module}@${staging_version}")
done
go mod edit "${args[@]}"
echo "replaced $(wc -w <<<"$modules") staging modules with ${staging_version}"
