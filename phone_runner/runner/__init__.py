"""The C++ on-device runner (``as2d_runner``): where its host build lives, and how to make one.

``scripts/setup.sh`` builds it into ``phone_runner/runner/build/`` when g++ and cmake exist. Tests
and the loopback device call :func:`runner_binary`, which uses that build when it is newer than
every source file, and otherwise builds once into a cache folder keyed on the sources' hash
(``$AS2D_CACHE/as2d_runner/<hash>/``), so a session never builds twice and never uses a stale
binary. Nothing here downloads anything.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from phone_runner.errors import RunnerError

HERE = Path(__file__).resolve().parent
SOURCES = ("CMakeLists.txt", "src")
SETUP_BUILD = HERE / "build" / "as2d_runner"


class RunnerBuildError(RunnerError):
    """The host reference runner could not be built; the message says what is missing."""


def _source_files() -> list[Path]:
    files = [HERE / "CMakeLists.txt", *sorted((HERE / "cmake").glob("*.cmake"))]
    files += sorted(p for p in (HERE / "src").rglob("*") if p.suffix in (".cpp", ".hpp"))
    return files


def source_hash() -> str:
    h = hashlib.sha256()
    for p in _source_files():
        h.update(str(p.relative_to(HERE)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _fresh(binary: Path) -> bool:
    return binary.exists() and binary.stat().st_mtime >= max(p.stat().st_mtime for p in _source_files())


def cache_root() -> Path:
    return Path(os.environ.get("AS2D_CACHE", Path.home() / ".cache" / "as2d")) / "as2d_runner"


TOOLCHAINS = {"host": None, "aarch64": HERE / "cmake" / "aarch64-linux-gnu.cmake"}
CROSS_TOOLS = {"aarch64": ("aarch64-linux-gnu-g++", "g++-aarch64-linux-gnu")}


def mnn_wheel() -> list[str]:
    """CMake options that link the MNN engine against the ``MNN`` pip wheel's library (host only)."""
    import importlib.util
    import sysconfig

    spec = importlib.util.find_spec("_mnncengine")
    if spec is None or not spec.origin:
        raise RunnerBuildError("the MNN pip wheel is not installed (pip install MNN==3.6.1): the host MNN "
                               "build links its library")
    libpython = Path(str(sysconfig.get_config_var("LIBDIR"))) / str(sysconfig.get_config_var("LDLIBRARY"))
    if libpython.suffix != ".so" or not libpython.is_file():
        raise RunnerBuildError(f"{libpython} is not a shared libpython: the MNN wheel's library needs one "
                               "(a Python built with --enable-shared)")
    return ["-DAS2D_WITH_MNN=ON", f"-DMNN_WHEEL_LIB={spec.origin}", f"-DMNN_WHEEL_PYTHON_LIB={libpython}"]


def build(build_dir: Path, jobs: int = 2, arch: str = "host", mnn: str | None = None) -> Path:
    """Configure and build the runner into ``build_dir``: the reference runner (no MNN) for this host,
    or cross-compiled (``arch="aarch64"``: static, runs under ``qemu-aarch64``); ``mnn="wheel"``: the
    host build with the MNN engine, linked against the ``MNN`` pip wheel (:func:`mnn_wheel`)."""
    tools = [("cmake", "cmake"), ("c++", "g++")] + ([CROSS_TOOLS[arch]] if arch in CROSS_TOOLS else [])
    for tool, package in tools:
        if shutil.which(tool) is None:
            raise RunnerBuildError(f"{tool} is not installed: run scripts/setup.sh as root (apt-get install {package})")
    build_dir.mkdir(parents=True, exist_ok=True)
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    chain = [f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAINS[arch]}"] if TOOLCHAINS[arch] else []
    for cmd in (["cmake", "-S", str(HERE), "-B", str(build_dir), *gen, *chain, "-DCMAKE_BUILD_TYPE=Release",
                 *(mnn_wheel() if mnn == "wheel" else ["-DAS2D_WITH_MNN=OFF"])],
                ["cmake", "--build", str(build_dir), "-j", str(jobs)]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RunnerBuildError(f"{' '.join(cmd[:2])} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    binary = build_dir / "as2d_runner"
    if not binary.exists():
        raise RunnerBuildError(f"the build finished but {binary} is missing")
    return binary


def runner_binary(arch: str = "host", mnn: str | None = None) -> Path:
    """An ``as2d_runner`` built from the current sources: for this host (setup's build, else a cached
    one) or for ``arch`` (``aarch64``: cached like the host build, keyed on the sources' hash);
    ``mnn="wheel"``: the host build with the MNN engine on the pip wheel's library (cached likewise)."""
    if mnn is not None and (mnn != "wheel" or arch != "host"):
        raise RunnerBuildError(f"--mnn {mnn} --arch {arch}: the host build links the MNN wheel (--mnn wheel); "
                               "a phone's MNN build is build_android.sh")
    if arch == "host" and mnn is None and _fresh(SETUP_BUILD):
        return SETUP_BUILD
    target = cache_root() / (source_hash() + ("" if arch == "host" else f"-{arch}") + ("-mnn-wheel" if mnn else ""))
    binary = target / "as2d_runner"
    if binary.exists():
        return binary
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    build(tmp, arch=arch, mnn=mnn)
    try:
        tmp.rename(target)  # atomic: a concurrent builder either wins or finds ours
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return binary


def main(argv: list[str] | None = None) -> None:
    """``python -m phone_runner.runner [--arch aarch64] [--mnn wheel]``: build (or find) the runner, print its path."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m phone_runner.runner", description=main.__doc__)
    ap.add_argument("--arch", choices=sorted(TOOLCHAINS), default="host")
    ap.add_argument("--mnn", choices=["wheel"], default=None,
                    help="host build with the MNN engine, linked against the MNN pip wheel's library")
    args = ap.parse_args(argv)
    print(runner_binary(args.arch, mnn=args.mnn))
