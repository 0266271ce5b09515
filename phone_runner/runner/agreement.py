"""Real-clock agreement: the C++ runner's real-clock reference mode against Python replay (TPS).

    python -m phone_runner.runner.agreement [--profile k70_pro] [--windows 4] [--tokens 40] [--direct]

Each configuration runs SYNTHETIC windows through the runner with ``clock: real``: the producer
thread, the verifier loop and the drain run for real, each operation sleeping its priced cost.
By default the runner is driven by phone_runner on a loopback phone (a real adb server on a
private port and the fake adbd); ``--direct`` starts the binary locally instead. The table gives
per-configuration TPS of both sides and the mean absolute relative error over windows; the
bar is 5% (D.3: the paper reports 5.81% on phones). Timing on a loaded machine is noisy, which
is why this is a report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from phone_runner.runner import runner_binary


def configs(widest: int) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The compared configurations; caps shrink to the profile's widest priced width (D.2.1)."""
    cap = min(24, widest - 1)
    return (("target_only", {}), ("sd", {"width": 8}), ("asp", {"cap": cap}), ("as2d", {"source": "qwen", "budget": 7}),
            ("as2d", {"source": "parakeet", "budget": 7}), ("as2d_wo_bc", {"source": "qwen", "cap": cap}))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_direct(request: dict[str, Any], tmp: Path) -> list[dict[str, Any]]:
    from phone_runner.records import read_jsonl

    path = tmp / f"{request['run_id']}.json"
    path.write_text(json.dumps({**request, "output": f"{request['run_id']}.jsonl"}))
    subprocess.run([str(runner_binary()), "--request", str(path)], check=True, capture_output=True, timeout=3600)
    return read_jsonl(tmp / f"{request['run_id']}.jsonl").of("window")


class _Loopback:
    """A private adb server and one loopback phone, torn down on exit."""

    def __enter__(self) -> _Loopback:
        from phone_runner.testing.loopback import LoopbackDevice

        self.tmp = Path(tempfile.mkdtemp(prefix="as2d-agreement-"))
        self.port = _free_port()
        self.env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(self.port)}
        os.environ["ANDROID_ADB_SERVER_PORT"] = str(self.port)
        adb = shutil.which("adb")
        if adb is None:
            raise SystemExit("adb is not installed: run scripts/setup.sh as root, or pass --direct")
        subprocess.run([adb, "start-server"], env=self.env, check=True, capture_output=True, timeout=60)
        self.dev_box = LoopbackDevice(self.tmp / "phone").start()
        self.dev_box.connect(self.port)
        import adbutils

        deadline = time.monotonic() + 20
        client = adbutils.AdbClient(port=self.port)
        while time.monotonic() < deadline:
            if any(d.serial == self.dev_box.serial and d.state == "device" for d in client.list()):
                break
            time.sleep(0.1)
        self.dev = client.device(self.dev_box.serial)
        return self

    def run(self, request: dict[str, Any], windows: list[Any], profile: Any) -> list[dict[str, Any]]:
        from phone_runner.session import PhoneConfig, run_config

        pc = PhoneConfig(runner="cpp", runner_binary=str(runner_binary()), state_dir=str(self.tmp / "state"),
                         engine=request["engine"])
        pc.deploy_runner(self.dev, progress=False)
        done = run_config(self.dev, pc, request, {w.window_id: w for w in windows}, profile, self.tmp / "out",
                          rest=False)
        return done.run.of("window")

    def __exit__(self, *exc: object) -> None:
        self.dev_box.stop()
        self.dev_box.disconnect(self.port)
        subprocess.run([shutil.which("adb") or "adb", "kill-server"], env=self.env, capture_output=True, timeout=60)
        shutil.rmtree(self.tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    from phone_runner.session import PhoneConfig, build_request
    from workbench.replay.engine import ReplayConfig, replay
    from workbench.replay.profile import load_profile
    from workbench.replay.synthetic import SyntheticSpec, paper_like_sources, synthetic_windows

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="k70_pro")
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--tokens", type=float, default=40.0, help="mean reference length of the synthetic windows")
    ap.add_argument("--direct", action="store_true", help="start the runner locally, not through the loopback phone")
    args = ap.parse_args(argv)

    profile = load_profile(args.profile)
    spec = SyntheticSpec(n_windows=args.windows, mean_tokens=args.tokens, sd_tokens=args.tokens / 4,
                         min_tokens=8, seed=7, sources=paper_like_sources())
    windows = synthetic_windows(spec)
    pc = PhoneConfig(engine={"kind": "reference", "clock": "real", "drain": "boundary"})
    errors: list[float] = []
    print(f"real-clock C++ runner vs Python replay, profile {profile.name}, {len(windows)} SYNTHETIC windows "
          f"({'direct' if args.direct else 'loopback phone via phone_runner'})")
    print(f"{'config':28s} {'replay TPS':>11s} {'runner TPS':>11s} {'MAE %':>7s} {'max %':>7s}")
    lb = None if args.direct else _Loopback().__enter__()
    tmp = Path(tempfile.mkdtemp(prefix="as2d-agreement-direct-"))
    try:
        for name, settings in configs(max(profile.verifier.idle_ms)):
            cfg = ReplayConfig(name, **settings)
            req = build_request(f"agree-{cfg.label.replace('/', '-')}", cfg, windows, profile, pc)
            got = {w["window_id"]: w for w in (_run_direct(req, tmp) if lb is None else lb.run(req, windows, profile))}
            py = {w.window_id: replay(w, cfg, profile) for w in windows}
            errs = [abs((got[k]["tokens"] / got[k]["time"]) / py[k].tps - 1.0) for k in py]
            errors += errs
            tps_py = sum(r.tokens for r in py.values()) / sum(r.time for r in py.values())
            tps_c = sum(w["tokens"] for w in got.values()) / sum(w["time"] for w in got.values())
            print(f"{cfg.label:28s} {tps_py:11.2f} {tps_c:11.2f} {100 * sum(errs) / len(errs):7.2f} "
                  f"{100 * max(errs):7.2f}", flush=True)
    finally:
        if lb is not None:
            lb.__exit__(None, None, None)
        shutil.rmtree(tmp, ignore_errors=True)
    mae = 100 * sum(errors) / len(errors)
    print(f"overall: mean absolute TPS error {mae:.2f}% over {len(errors)} window runs "
          f"(max {100 * max(errors):.2f}%); bar 5%")
    return 0 if mae <= 5.0 else 1


if __name__ == "__main__":
    sys.exit(main())
