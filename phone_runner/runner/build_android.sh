#!/usr/bin/env bash
# Cross-compile as2d_runner for Android (arm64-v8a) with the MNN engine (MnnWhisperModel, MnnLlmModel).
#
# Run it on a machine with the Android NDK. It never downloads anything: fetching MNN is the one
# network step, and it is yours (once):
#
#   git clone --branch 3.6.1 --depth 1 https://github.com/alibaba/MNN.git ~/src/MNN
#   ANDROID_NDK=~/Android/Sdk/ndk/26.3.11579264 MNN_SRC=~/src/MNN phone_runner/runner/build_android.sh
#
# Variables (environment):
#   ANDROID_NDK  NDK root (r25 or newer)                                           required
#   MNN_SRC      MNN source tree checked out at MNN_TAG                            required
#   MNN_TAG      the pinned MNN release; the tree's tag must match                 default 3.6.1
#   ABI          Android ABI                                                       default arm64-v8a
#   API_LEVEL    minimum Android API                                               default 28
#   OPENCL       build MNN's OpenCL backend (the target model's backend, Table 6)  default ON
#   BUILD_DIR    where both builds go (outside git)                                default phone_runner/runner/build-android
#   JOBS         parallel compile jobs                                             default nproc
#
# Output: $BUILD_DIR/runner/as2d_runner, one static binary (MNN and libc++ linked in). Deploy it
# with phone_runner (phone.runner=cpp phone.runner_binary=<that path>), which pushes it to
# /data/local/tmp/as2d/bin/as2d_runner; or by hand: adb push ... && adb shell <path> --request ...
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
: "${ANDROID_NDK:?set ANDROID_NDK to the Android NDK root (e.g. ~/Android/Sdk/ndk/26.3.11579264)}"
: "${MNN_SRC:?set MNN_SRC to an MNN source tree at tag ${MNN_TAG:-3.6.1} (git clone --branch 3.6.1 https://github.com/alibaba/MNN.git)}"
MNN_TAG="${MNN_TAG:-3.6.1}"
ABI="${ABI:-arm64-v8a}"
API_LEVEL="${API_LEVEL:-28}"
OPENCL="${OPENCL:-ON}"
BUILD_DIR="${BUILD_DIR:-$HERE/build-android}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
TOOLCHAIN="$ANDROID_NDK/build/cmake/android.toolchain.cmake"

[ -f "$TOOLCHAIN" ] || { echo "build_android: no NDK toolchain file at $TOOLCHAIN (check ANDROID_NDK)" >&2; exit 2; }
[ -f "$MNN_SRC/transformers/llm/engine/include/llm/llm.hpp" ] || {
  echo "build_android: $MNN_SRC is not an MNN source tree with the LLM engine" >&2; exit 2; }
# The adapter mirrors the Llm API of one release: refuse any other tree rather than guess.
have_tag="$(git -C "$MNN_SRC" describe --tags --exact-match 2>/dev/null || true)"
if [ "$have_tag" != "$MNN_TAG" ]; then
  echo "build_android: $MNN_SRC is at '${have_tag:-no tag}', expected MNN $MNN_TAG" >&2
  echo "build_android: git -C $MNN_SRC fetch --depth 1 origin tag $MNN_TAG && git -C $MNN_SRC checkout $MNN_TAG" >&2
  exit 2
fi

common=(-DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" -DANDROID_ABI="$ABI" -DANDROID_PLATFORM="android-$API_LEVEL"
        -DANDROID_STL=c++_static -DCMAKE_BUILD_TYPE=Release)

# What each adapter needs from MNN:
# * Whisper (MnnWhisperModel): the Express Module API (inside libMNN with MNN_SEP_BUILD=OFF) to load
#   encoder.mnn / decoder.mnn with mutable shapes (K-wide verify, a growing KV); MNN_LOW_MEMORY for
#   int8 exports (dynamic int8 compute); MNN_ARM82 for fp16 (precision low). No MNN_BUILD_AUDIO: the
#   host sends log-mel features, so the phone computes none.
# * LLM folders (MnnLlmModel): MNN_BUILD_LLM and MNN_SUPPORT_TRANSFORMER_FUSE.
echo "build_android: 1/2 MNN $MNN_TAG for $ABI (static, Express modules + LLM engine, OpenCL=$OPENCL)"
cmake -S "$MNN_SRC" -B "$BUILD_DIR/mnn" "${common[@]}" \
  -DMNN_BUILD_SHARED_LIBS=OFF -DMNN_SEP_BUILD=OFF -DMNN_BUILD_LLM=ON -DMNN_LOW_MEMORY=ON \
  -DMNN_SUPPORT_TRANSFORMER_FUSE=ON -DMNN_ARM82=ON -DMNN_OPENCL="$OPENCL" -DMNN_USE_LOGCAT=ON \
  -DMNN_BUILD_AUDIO=OFF -DMNN_BUILD_OPENCV=OFF \
  -DMNN_BUILD_TEST=OFF -DMNN_BUILD_BENCHMARK=OFF -DMNN_BUILD_TOOLS=OFF -DMNN_BUILD_DEMO=OFF
cmake --build "$BUILD_DIR/mnn" -j "$JOBS" --target MNN  # static: the LLM engine is inside libMNN.a

echo "build_android: 2/2 as2d_runner with MnnWhisperModel and MnnLlmModel"
cmake -S "$HERE" -B "$BUILD_DIR/runner" "${common[@]}" \
  -DAS2D_WITH_MNN=ON -DMNN_SOURCE_DIR="$MNN_SRC" -DMNN_BUILD_DIR="$BUILD_DIR/mnn"
cmake --build "$BUILD_DIR/runner" -j "$JOBS"

echo "build_android: done: $BUILD_DIR/runner/as2d_runner"
