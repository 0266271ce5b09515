"""Phone-profile replay: device cost profiles, event-driven replay, budget selection, oracle.

Prices saved operation trajectories with per-device calibrated costs (paper D.2-D.5), driving the
decoding core's schemes unchanged and emitting the core's round records plus stage intervals.
"""

from .catalog import as2d_catalog, run_catalog
from .engine import producer_plan, replay, replay_many, results_frame
from .profile import DeviceProfile, MissingWidthError, ProfileError, available_profiles, load_profile
from .result import ReplayConfig, ReplayResult
from .selection import DevSplit, OracleReport, Selection, TestSplit, hindsight_oracle, select_budget, split_windows
from .trajectory import SourceTrack, TrajectoryError, Window, load_windows, save_windows

__all__ = [
    "DevSplit", "DeviceProfile", "MissingWidthError", "OracleReport", "ProfileError", "ReplayConfig",
    "ReplayResult", "Selection", "SourceTrack", "TestSplit", "TrajectoryError", "Window", "as2d_catalog",
    "available_profiles", "hindsight_oracle", "load_profile", "load_windows", "producer_plan", "replay",
    "replay_many", "results_frame", "run_catalog", "save_windows", "select_budget", "split_windows",
]
