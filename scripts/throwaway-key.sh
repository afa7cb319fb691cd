#!/usr/bin/env bash
# Makes a throwaway ed25519 signing key (tests only: `make test` builds and smoke-tests a signed
# release with it) in a fresh folder outside the repository, and prints its path. The caller
# removes the folder. Real releases use ROOTLESS_K8S_SIGNING_KEY (docs/binary.md, "Signed releases").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
node=$root/node_modules/.bin/node
[ -x "$node" ] || node=node
dir=$(mktemp -d)
"$node" -e 'const c = require("node:crypto"); require("node:fs").writeFileSync(process.argv[1], c.generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });' "$dir/throwaway.pem"
echo "$dir/throwaway.pem"
