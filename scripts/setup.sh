#!/usr/bin/env bash
# Install everything the workbench needs: system packages (apt, when root), then Python packages.
#   bash scripts/setup.sh            # everything (what `make setup` runs)
#   bash scripts/setup.sh --system   # system packages only (what .ci/run checks first, every time)
# A required system package that cannot be installed stops the script with exit 1 (as root), or
# -- for a non-root user, who cannot apt-install -- is named with the command to run, and fails
# the script only when CI is set (CI must not quietly skip the tests that need it).
set -euo pipefail
PY=${PY:-python3}
VENV=${VENV:-.venv}
cd "$(dirname "$0")/.."

# Debian packages, one per line with why. Append yours here (one line, a comment, what needs it).
APT_PACKAGES=(
  pocketsphinx-testdata  # real LibriVox speech: demo corpus, real-weight tests
  adb                    # the real adb server for phone_runner
  cmake                  # host build of the C++ on-device runner, phone_runner/runner
  g++                    # host build of the C++ on-device runner, phone_runner/runner
  g++-aarch64-linux-gnu  # aarch64 cross-build of the runner (.ci/run, tests/phone_runner/test_conformance_arm.py)
  qemu-user              # qemu-aarch64 runs the cross-built runner in the conformance test
  chromium               # headless browser for tests/browser: MLflow UI and JupyterLab
  chromium-driver        # chromedriver that Selenium drives Chromium with
  espeak-ng              # bench corpus: eSpeak NG voices (workbench.data.bench_corpus_audio)
  flite                  # bench corpus: CMU Flite voices awb, kal16, rms, slt
  asterisk-core-sounds-en-wav  # bench corpus: real telephone speech (Allison Smith's prompts, CC-BY-SA-3.0)
  asterisk-core-sounds-en      # bench corpus: the prompts' transcripts (core-sounds-en.txt.gz)
)

in_ci() { case "${CI:-}" in "" | 0 | false | no) return 1 ;; *) return 0 ;; esac; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing_packages() {
  local p
  for p in "${APT_PACKAGES[@]}"; do installed "$p" || echo "$p"; done
}

system_packages() {
  local missing
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "setup: not a Debian/Ubuntu system; install the equivalents of: ${APT_PACKAGES[*]}" >&2
    if in_ci; then echo "setup: FAILED (CI is set): cannot check system packages" >&2; exit 1; fi
    return 0
  fi
  missing=$(missing_packages | tr '\n' ' ')
  [ -z "${missing// /}" ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    # An update failure (offline mirror) is reported but not fatal: the install below decides.
    apt-get update -qq || echo "setup: apt-get update failed; trying the install with cached lists" >&2
    local p
    for p in $missing; do  # one at a time: an unknown package must not block the others
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null || true
    done
    missing=$(missing_packages | tr '\n' ' ')
    if [ -n "${missing// /}" ]; then
      echo "setup: FAILED: apt could not install required system package(s): $missing" >&2
      echo "setup: fix the apt sources or install them by hand, then rerun" >&2
      exit 1
    fi
    return 0
  fi
  echo "setup: not root, so apt is skipped; missing system package(s): $missing" >&2
  echo "setup: run: sudo apt-get install -y $missing   (tests that need them will skip outside CI)" >&2
  if in_ci; then echo "setup: FAILED (CI is set): required system packages are missing" >&2; exit 1; fi
}

system_packages
[ "${1:-}" = "--system" ] && exit 0

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# torch first and pinned: 2.13.0 is a local CPU wheel here; an unpinned torch pulls a multi-GB CUDA build.
"$VENV/bin/python" -m pip install -q "torch==2.13.0"
"$VENV/bin/python" -m pip install -q -e ".[dev]"

# Build steps (native parts), one block each with why. Append yours below.

# C++ on-device runner, host build (reference model, no MNN). phone_runner uses it on the
# loopback phone; tests reuse it while it is newer than its sources (else they build a cached copy).
if command -v cmake >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1; then
  cmake -S phone_runner/runner -B phone_runner/runner/build -DCMAKE_BUILD_TYPE=Release -DAS2D_WITH_MNN=OFF >/dev/null
  cmake --build phone_runner/runner/build -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
  echo "setup: built phone_runner/runner/build/as2d_runner"
else
  echo "setup: cmake or a C++ compiler is missing; the C++ runner is not built (tests build it when they can)" >&2
fi
