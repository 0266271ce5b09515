#!/usr/bin/env bash
# Install everything the workbench needs: system packages (when root), then Python packages.
set -euo pipefail
PY=${PY:-python3}
VENV=${VENV:-.venv}
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  # Real LibriVox speech for the demo corpus and real-weight tests; optional elsewhere.
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pocketsphinx-testdata >/dev/null || \
    echo "setup: apt could not install pocketsphinx-testdata; the demo falls back to synthesized speech" >&2
  # The real adb server for phone_runner (issue 15); tests drive it against the loopback device.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq adb >/dev/null || echo "setup: apt could not install adb" >&2
fi

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# torch first and pinned: 2.13.0 is a local CPU wheel here; an unpinned torch pulls a multi-GB CUDA build.
"$VENV/bin/python" -m pip install -q "torch==2.13.0"
"$VENV/bin/python" -m pip install -q -e ".[dev]"
