#!/usr/bin/env bash
# Installs the MCP reference server the integration tests run, exactly as
# package-lock.json pins it. Run by .ci/run and by make test when npm exists.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
