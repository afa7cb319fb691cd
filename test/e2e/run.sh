#!/usr/bin/env bash
# `make e2e`: end-to-end scenarios under real systemd (see issue 5). None are written yet.
set -euo pipefail
echo "e2e: no scenarios yet"
