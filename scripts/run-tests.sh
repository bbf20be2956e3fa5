#!/usr/bin/env bash
# Quick start, command 2: set up, build, and run the whole test suite.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
echo "== ctest"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 "$@"
