#!/usr/bin/env bash
# Publishes Integrations/ as a package of its own, the way users depend on it: a git repository
# whose Package.swift names the core package by URL and version instead of by path, tagged with
# the release's version. The core package itself stays dependency-free; only this second
# package depends on AsyncHTTPClient, Hummingbird, swift-log, swift-metrics and the rest.
#
#   scripts/publish-integrations.sh --version 1.2.0 --core-url https://github.com/OWNER/swift-serial-runtime.git \
#       --output /tmp/swift-serial-runtime-integrations
#
# The output is a git repository with one commit, tagged VERSION: push it (and the same tag on
# the core repository) to publish. The core must carry the tag VERSION too, since the published
# manifest asks for the core `from: VERSION`.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: scripts/publish-integrations.sh --version X.Y.Z --core-url URL --output DIR" >&2
    exit 64
}

version="" core_url="" output=""
while [ $# -gt 0 ]; do
    case "$1" in
        --version) version="${2:-}"; shift 2 ;;
        --core-url) core_url="${2:-}"; shift 2 ;;
        --output) output="${2:-}"; shift 2 ;;
        -h|--help) usage ;;
        *) echo "publish-integrations: unknown argument '$1'" >&2; usage ;;
    esac
done
[ -n "$version" ] && [ -n "$core_url" ] && [ -n "$output" ] || usage
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "publish-integrations: version '$version' is not X.Y.Z (SwiftPM resolves semantic versions only)" >&2
    exit 64
fi
if [ -e "$output" ] && [ -n "$(ls -A "$output" 2>/dev/null)" ]; then
    echo "publish-integrations: '$output' exists and is not empty; give a new folder" >&2
    exit 1
fi

mkdir -p "$output"
# The tracked files of Integrations/, as committed (no build folders, no local edits).
git archive HEAD Integrations | tar -x -C "$output" --strip-components=1

# The one line that differs: the core by URL and version instead of by path.
manifest="$output/Package.swift"
grep -q '\.package(name: "swift-serial-runtime", path: "\.\.")' "$manifest" || {
    echo "publish-integrations: Integrations/Package.swift no longer names the core by path as expected" >&2
    exit 1
}
sed -i "s|\.package(name: \"swift-serial-runtime\", path: \"\.\.\")|.package(url: \"$core_url\", from: \"$version\")|" \
    "$manifest"

git -C "$output" init -q
git -C "$output" add -A
git -C "$output" -c user.name="release" -c user.email="release@localhost" commit -qm "swift-serial-runtime-integrations $version"
git -C "$output" tag "$version"
echo "published Integrations/ as $output, tag $version, depending on $core_url from $version"
