"""README.md is a short user guide whose recipes run: each recipe's lines on fixtures.

Fixtures: a tiny copy of each corpus layout (``tests/data/dataset_fixtures.py``), the offline
Whisper pair's converted weights as a local transformers directory, the loopback phone (a fake
adbd behind a real adb server, ``phone_runner/testing``), and a two-job sweep on SYNTHETIC windows.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import mlflow
import pytest
from hydra import compose, initialize_config_dir

from tests.data import dataset_fixtures as fx

from .readme_recipes import README, ROOT, argv, overrides, recipes

CONF = ROOT / "conf"
ONE_WINDOW = ["dataset.window.mode=utterance", "dataset.cohort.splits.test=1", "dataset.cohort.splits.dev=1",
              "dataset.cohort.splits.validation=0", "dataset.cohort.splits.calibration=0"]
SECTIONS = ["## Two commands", "## Recipes", "### Your own corpus", "### Your own model", "### Your own phone",
            "### A sweep, compared in the MLflow UI", "### The notebooks", "### Scaling out with Ray or SLURM",
            "## Troubleshooting"]


def compose_cfg(over: list[str], hydra: bool = False):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=over, return_hydra_config=hydra)


def cli(words: list[str], env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    cmd = [sys.executable, *words[1:]] if words[0] == "python" else words
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def job_runs(db: Path, role: str = "job") -> list:
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    found = mlflow.search_runs(search_all_experiments=True, output_format="list")
    return [r for r in found if r.data.tags.get("as2d.role") == role]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 120.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{proc.args} exited {proc.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.status
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {timeout} s")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


# -- the guide itself ------------------------------------------------------------------------------

def test_readme_is_a_short_guide_in_the_order_a_user_needs():
    text = README.read_text()
    assert len(text.encode()) <= 15 * 1024, f"README.md is {len(text.encode())} bytes; the guide holds <= 15 KB"
    at = [text.find(s) for s in SECTIONS]
    assert -1 not in at and at == sorted(at), dict(zip(SECTIONS, at, strict=True))
    assert set(recipes(text)) == {"corpus", "model", "phone", "sweep", "notebooks", "scale"}
    picture = re.search(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)
    assert picture and (ROOT / picture.group(1)).is_file(), "the picture of a result is committed"
    # The test command the README gives is what CI runs.
    assert "make test" in text and "make demo" in text
    ci = (ROOT / ".ci/run").read_text().strip().splitlines()
    assert ci[-1] == "make test"
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^test: .*\n\t\$\(BIN\)/python -m pytest -q -n 2 --dist loadfile$", make, re.M)
    assert "python -m pytest -q -n 2 --dist loadfile" in text  # the README names the same command
    assert re.search(r"^demo: .*\n\t\$\(BIN\)/python -m workbench.run experiment=demo$", make, re.M)


# -- your own corpus -------------------------------------------------------------------------------

BUILDERS = {"librispeech": fx.librispeech, "ami": fx.ami, "fleurs": fx.fleurs, "kespeech": fx.kespeech,
            "m4singer": fx.m4singer, "covost2_en_zh": fx.covost2, "spoken_squad": fx.spoken_squad,
            "gigaspeech": fx.gigaspeech, "spgispeech": fx.spgispeech, "earnings22": fx.earnings22}
EXTRA = {"fleurs": ["dataset.languages=[de_de]"]}  # the fixture holds two of the six languages


def layout_rows(text: str) -> list[str]:
    section = text[text.index("### Your own corpus"):text.index("### Your own model")]
    return re.findall(r"^\| `(\w+)` \| ", section, re.M)


def test_every_layout_in_the_corpus_table_loads_through_the_recipe_command(tmp_path, speech):
    from workbench.data.datasets import dataset_windows

    (line,) = recipes()["corpus"]
    env, words = argv(line, {})
    over = overrides(words)
    named = next(o for o in over if o.startswith("dataset="))
    rows = layout_rows(README.read_text())
    assert set(rows) == set(BUILDERS), rows
    for name in rows:
        built = BUILDERS[name](tmp_path / name, speech)
        root = built[0] if isinstance(built, tuple) else built
        these = [o for o in over if not o.startswith(("dataset=", "dataset.root="))]
        cfg = compose_cfg([*these, f"dataset={name}", f"dataset.root={root}", *EXTRA.get(name, [])])
        assert cfg.job == "replay" and cfg.dataset.name == name
        assert dataset_windows(dict(cfg.dataset)), f"{name}: the layout in the table gave no windows"
    assert named == "dataset=librispeech"


def test_corpus_recipe_runs_end_to_end_on_the_librispeech_layout(tmp_path, speech):
    root = fx.librispeech(tmp_path / "data", speech)
    (line,) = recipes()["corpus"]
    env, words = argv(line, {"/data/LibriSpeech": str(root)})
    db, out = tmp_path / "m.db", tmp_path / "out"
    res = cli([*words, *ONE_WINDOW, f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={out}"], env)
    assert res.returncode == 0, res.stderr[-3000:]
    (run,) = job_runs(db)
    assert run.info.status == "FINISHED" and run.data.params["dataset.name"] == "librispeech"
    assert run.data.metrics["exactness_mismatches"] == 0.0


# -- your own model --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def local_dirs() -> dict[str, Path]:
    """The offline pair's converted weights: real transformers directories on local disk."""
    from workbench.models.registry import ModelSpec, load_model_config, resolve_weights

    cfg = load_model_config("whisper_base")
    return {role: resolve_weights(ModelSpec.from_dict(cfg[role])) for role in ("target", "drafter")}


def model_lines() -> dict[str, str]:
    lines = recipes()["model"]
    return {"local": next(ln for ln in lines if "local_path" in ln and "engine=mnn" not in ln),
            "hub": next(ln for ln in lines if "hub_id=" in ln),
            "export": next(ln for ln in lines if "mnn.export" in ln),
            "mnn": next(ln for ln in lines if "engine=mnn" in ln)}


def test_model_recipe_runs_a_local_transformers_directory(tmp_path, speech, local_dirs):
    assert all((d / "config.json").is_file() for d in local_dirs.values())
    root = fx.librispeech(tmp_path / "data", speech)
    subs = {"/data/LibriSpeech": str(root), "/models/whisper-base": str(local_dirs["target"]),
            "/models/whisper-tiny.en": str(local_dirs["drafter"])}
    env, words = argv(model_lines()["local"], subs)
    db, out = tmp_path / "m.db", tmp_path / "out"
    res = cli([*words, *ONE_WINDOW, f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={out}"], env)
    assert res.returncode == 0, res.stderr[-3000:]
    (run,) = job_runs(db)
    assert run.info.status == "FINISHED" and run.data.metrics["exactness_mismatches"] == 0.0
    assert run.data.params["model.target.local_path"] == str(local_dirs["target"])


def test_model_recipe_hub_id_names_the_switches_it_uses(monkeypatch):
    from workbench.models.registry import MissingWeightsError, ModelSpec, resolve_weights

    env, words = argv(model_lines()["hub"], {"<commit sha>": "0" * 40})
    assert env == {"AS2D_ALLOW_NETWORK": "1"}
    cfg = compose_cfg(overrides(words))
    spec = ModelSpec.from_dict(dict(cfg.model.target))
    assert spec.hub_id == "openai/whisper-small" and spec.revision == "0" * 40 and spec.offline_package is None
    # without the switch the hub is never tried, and the refusal names the switch the recipe sets
    monkeypatch.delenv("AS2D_ALLOW_NETWORK", raising=False)
    spec = ModelSpec.from_dict({**dict(cfg.model.target), "local_path": None})
    with pytest.raises(MissingWeightsError, match="AS2D_ALLOW_NETWORK=1"):
        resolve_weights(spec, allow_network=False)
    # and an unpinned hub id is refused even with the switch: the recipe pins the revision
    with pytest.raises(MissingWeightsError, match="no pinned revision"):
        resolve_weights(replace(spec, revision=None), allow_network=True)


@pytest.mark.slow
def test_model_recipe_exports_to_mnn_and_composes_the_mnn_engine(local_dirs):
    from workbench.jobs.native import validate
    from workbench.models.mnn.export import check_export

    lines = model_lines()
    env, words = argv(lines["export"], {"/models/whisper-base": str(local_dirs["target"])})
    res = cli(words, env, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    export = Path(res.stdout.strip().splitlines()[-1])
    check_export(export)  # manifest sizes and sha256 of every exported file
    env, words = argv(lines["mnn"], {"/models/whisper-base": str(local_dirs["target"])})
    cfg = compose_cfg(overrides(words))
    assert cfg.job == "native_host" and cfg.model.engine == "mnn"
    validate(cfg)  # the engine check and the weights check the job makes before any work


# -- scaling out -----------------------------------------------------------------------------------

def test_scale_recipe_composes_the_ray_and_slurm_launchers():
    targets = {"ray": "RayLauncher", "submitit_slurm": "SlurmLauncher"}
    for line in recipes()["scale"]:
        env, words = argv(line, {})
        over = [o for o in overrides(words) if o != "-m"]
        # a sweep's values compose one by one: take the first of each (a [list] is one value)
        cfg = compose_cfg([o if "[" in o else o.split(",")[0] for o in over], hydra=True)
        launcher = next(o.split("=")[1] for o in over if o.startswith("hydra/launcher="))
        assert targets[launcher] in cfg.hydra.launcher._target_
        assert cfg.job == "replay"
        if launcher == "submitit_slurm":
            assert cfg.hydra.launcher.partition == "cpu"
        assert list(cfg.methods) == ["target_only", "as2d"]  # a budget sweep with its own baseline


# -- your own phone --------------------------------------------------------------------------------

PHONE_BINARY = "phone_runner/runner/build-android/runner/as2d_runner"


def phone_lines() -> dict[str, str]:
    """The phone recipe's lines by what they do; the recipe holds exactly these, in this order."""
    lines = recipes()["phone"]
    names = ["adb", "build", "export", "phone_info", "calibrate_phone", "native_phone"]
    assert len(lines) == len(names), lines
    assert lines[0] == "adb devices" and "build_android.sh" in lines[1] and "mnn.export" in lines[2]
    assert [f"experiment={n}" in ln for n, ln in zip(names[3:], lines[3:], strict=True)] == [True] * 3
    return dict(zip(names, lines, strict=True))


def phone_quick(tmp: Path, conf: Path) -> list[str]:
    """Test-only overrides: private stores (MLflow, outputs, resume folders, the written profile on
    Hydra's search path), no rest between configurations, and a small calibration and native run
    (widths up to the default budget's K = b + 1 = 4, fewer repetitions and seconds of audio: sizes,
    not what is run)."""
    return [f"tracking.uri=sqlite:///{tmp}/m.db", f"out_dir={tmp}/out", f"phone.state_dir={tmp}/st",
            f"phone.profile_dir={conf}/device", f"hydra.searchpath=[file://{conf}]", "phone.conditions.rest_s=0",
            "phone.calibrate.reps=2", "phone.calibrate.widths=[1,2,3,4]", "phone.calibrate.offsets=[0]",
            "phone.max_seconds=6", "phone.max_windows=1", "phone.idle_timeout_s=900"]


def adb_devices_lists(serial: str, port: int) -> None:
    # the private adb server of the tests (never the user's on 5037) is the only change to the line
    env, words = argv(phone_lines()["adb"], {})
    res = cli(words, {**env, "ANDROID_ADB_SERVER_PORT": str(port)}, timeout=60)
    assert f"{serial}\tdevice" in res.stdout, res.stdout


def test_phone_recipe_lines_pass_the_phone_jobs_checks(loopback, adb_server, tmp_path):
    """Every job line as written, with only the local paths the loopback phone needs, passes the
    checks its job makes before an MLflow run exists (the reference engine's protocol check among
    them); phone_info runs as written. The full MNN run is the slow test below."""
    from workbench.jobs.phone import validate
    from workbench.run import execute

    adb_devices_lists(loopback.serial, adb_server)
    conf = tmp_path / "conf"
    (conf / "device").mkdir(parents=True)
    # native_phone names the profile calibration writes; here a stand-in copy lets its line compose
    (conf / "device/my_phone.yaml").write_text((CONF / "device/k70_pro.yaml").read_text())
    folders = {f"<{role} export>": str(tmp_path / role) for role in ("target", "producer")}
    for folder in folders.values():  # model folders to push: the checks only need them to exist
        Path(folder).mkdir()
    binary = tmp_path / "as2d_runner"  # the checks only need the binary to exist; this one never runs
    binary.write_bytes(b"")
    lines = phone_lines()
    info = execute(compose_cfg([*overrides(argv(lines["phone_info"], {})[1]), *phone_quick(tmp_path, conf)]))
    assert info.tables["table6"].row(0, named=True)["device"] == "Loopback K70"
    for job in ("calibrate_phone", "native_phone"):
        cfg = compose_cfg([*overrides(argv(lines[job], {**folders, PHONE_BINARY: str(binary)})[1]),
                           *phone_quick(tmp_path, conf)])
        assert cfg.job == job and cfg.phone.engine.kind == "mnn" and cfg.phone.runner == "cpp"
        validate(cfg)


@pytest.mark.slow
def test_phone_recipe_runs_on_the_loopback_phone_with_the_mnn_engine(loopback, adb_server, tmp_path):
    """The recipe end to end on the loopback phone: calibrated with MNN forwards, then a native run
    under the profile just written. What differs from the README, and why, is said at each step."""
    from phone_runner.runner import runner_binary
    from workbench.replay.profile import load_profile
    from workbench.run import execute

    lines = phone_lines()
    adb_devices_lists(loopback.serial, adb_server)
    # build_android.sh needs the Android NDK and builds for arm64; the loopback phone is this host, so
    # the same runner sources are built for it, with MNN from the pip wheel (phone_runner/README.md)
    binary = runner_binary(mnn="wheel")
    env, words = argv(lines["export"], {})
    res = cli(words, env, timeout=1800)  # as written: the pair's exports, cached after the first run
    assert res.returncode == 0, res.stderr[-3000:]
    target = res.stdout.strip().splitlines()[0]
    # the producer must share the target's vocabulary; whisper-tiny's weights are not installed
    # offline, so the target's own export stands in as the producer (as tests/phone_runner/test_cpp_mnn.py)
    subs = {PHONE_BINARY: str(binary), "<target export>": target, "<producer export>": target}
    conf = tmp_path / "conf"
    (conf / "device").mkdir(parents=True)
    results = {}
    for job in ("phone_info", "calibrate_phone", "native_phone"):
        results[job] = execute(compose_cfg([*overrides(argv(lines[job], subs)[1]), *phone_quick(tmp_path, conf)]))
    assert results["phone_info"].tables["table6"].row(0, named=True)["device"] == "Loopback K70"
    assert results["calibrate_phone"].tags["profile_kind"] == "measured"
    assert load_profile(conf / "device/my_phone.yaml").anchor_ms  # measured, with its drift anchor
    native = results["native_phone"]
    assert native.metrics["exactness_mismatches"] == 0
    assert {r["method"].split("/")[0] for r in native.summary.iter_rows(named=True)} == {"target_only", "as2d"}
    done = [r for r in job_runs(tmp_path / "m.db") if r.data.tags.get("job") in ("calibrate_phone", "native_phone")]
    assert sorted(r.info.status for r in done) == ["FINISHED", "FINISHED"]


# -- a sweep in the MLflow UI, then the notebooks --------------------------------------------------

def test_sweep_recipe_lands_in_the_ui_and_the_notebooks_read_it(tmp_path):
    db = tmp_path / "m.db"
    sweep, ui = recipes()["sweep"]
    env, words = argv(sweep, {})
    res = cli([*words, "dataset.n_windows=4", f"tracking.uri=sqlite:///{db}", f"hydra.sweep.dir={tmp_path}/sweep"], env)
    assert res.returncode == 0, res.stderr[-3000:]
    (parent,) = job_runs(db, "sweep")
    children = job_runs(db)
    assert parent.info.status == "FINISHED" and len(children) == 2
    assert sorted(c.data.params["model.budget"] for c in children) == ["1", "3"]
    configs = job_runs(db, "config")
    assert {c.data.params["budget"] for c in configs if c.data.params["method"] == "as2d"} == {"1", "3"}
    assert all(c.data.metrics["tps"] > 0 for c in configs)  # the column Compare shows
    # The UI command, on this store: it serves the runs.
    port = free_port()
    bindir = str(Path(sys.executable).parent) + "/"
    env, words = argv(ui, {"sqlite:///mlruns/mlflow.db": f"sqlite:///{db}", ".venv/bin/": bindir})
    proc = subprocess.Popen([*words, "--port", str(port)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, **env})
    try:
        assert wait_http(f"http://127.0.0.1:{port}/health", proc) == 200
    finally:
        stop(proc)
    # The notebooks: JupyterLab starts with the recipe's flags; the headless line runs a notebook.
    lab, headless = recipes()["notebooks"]
    env, words = argv(lab, {".venv/bin/": bindir})
    port = free_port()
    lab_env = {**os.environ, **env, "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    proc = subprocess.Popen([*words, "--no-browser", f"--port={port}", "--ServerApp.token=",
                             f"--ServerApp.root_dir={ROOT}"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=lab_env)
    try:
        assert wait_http(f"http://127.0.0.1:{port}/api/status", proc) == 200
    finally:
        stop(proc)
    env, words = argv(headless, {".venv/bin/": bindir, "/tmp/nb": str(tmp_path / "nb")})
    res = cli(words, {**env, "MLFLOW_TRACKING_URI": f"sqlite:///{db}", "AS2D_FIGURES_DIR": str(tmp_path / "fig")},
              timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    executed = (tmp_path / "nb" / "fig5_tps_cdf.ipynb").read_text()
    assert "image/png" in executed and "Traceback" not in executed
