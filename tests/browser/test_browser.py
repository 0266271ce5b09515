"""The researcher's loop in a real browser: headless Chromium (Selenium) on the reduced demo's store.

The demo's store is copied and, as a researcher would next, one budget sweep and one synthetic
replay run into the copy (``loop_store``). Then:

* the project's MLflow UI (``python -m workbench.ui``) opened at Home, experiment clicked, lands on the
  runs list (not GenAI traces); the demo's configuration child runs list with a ``tps`` column (added as
  a user would, through the Sort menu), a child run shows its ``tps``, and the job run previews its figure;
* the sweep's parent run shows its description, its sortable metrics (``best_speedup``) and its summary;
* JupyterLab started here opens ``fig5_tps_cdf``, runs it, and shows rendered charts (PNG images made
  offline by vl-convert) with no "Error loading script"; after the sweep and the synthetic run it still
  draws the demo and says so in the printed selection and in the chart's title.

Screenshots and the servers' logs go to ``$AS2D_TEST_ARTIFACTS/browser`` (default
``outputs/test-artifacts/browser``). Every server started here is stopped here. Waits are generous
(a loaded 2-core machine renders the MLflow UI slowly) and nothing here asserts a duration.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _first_executable(*paths: str | None) -> str | None:
    return next((p for p in paths if p and os.path.isfile(p) and os.access(p, os.X_OK)), None)


# Debian's /usr/bin/chromium is a shell wrapper that adds flags from /etc/chromium.d; the binary itself
# behaves the same everywhere, so it is preferred when present.
CHROMIUM = _first_executable(os.environ.get("AS2D_CHROMIUM"), "/usr/lib/chromium/chromium",
                             shutil.which("chromium"), shutil.which("chromium-browser"), shutil.which("google-chrome"))
CHROMEDRIVER = _first_executable(os.environ.get("AS2D_CHROMEDRIVER"), shutil.which("chromedriver"),
                                 "/usr/lib/chromium/chromedriver")
if not (CHROMIUM and CHROMEDRIVER):  # in CI a skip fails the run (tests/conftest.py)
    pytest.skip("apt-get install chromium chromium-driver (scripts/setup.sh does, as root)", allow_module_level=True)

CHROME_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-extensions", "--disable-dev-shm-usage", "--window-size=2400,1100")
WAIT_S = 300  # per step; generous on purpose (never a performance assertion)


def shots_dir() -> Path:
    d = Path(os.environ.get("AS2D_TEST_ARTIFACTS") or ROOT / "outputs" / "test-artifacts") / "browser"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, n: int = 3000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else ""


def _wait_http(url: str, proc: subprocess.Popen, what: str, log: Path, timeout: float = 400) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode} before serving {url}; log {log}:\n{_tail(log)}")
        try:
            urllib.request.urlopen(url, timeout=5)
            return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"{what} did not serve {url} within {timeout:.0f} s; log {log}:\n{_tail(log)}")


def _serve(cmd: list[str], log: Path, **kw: Any) -> subprocess.Popen:
    with open(log, "w") as f:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, **kw)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


# Servers and the browser: offline and quiet (no telemetry, update checks or news fetched at start-up).
QUIET_ENV = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true", "SE_OFFLINE": "true"}


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (*CHROME_FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        opts.add_argument(flag)
    service = Service(CHROMEDRIVER, log_output=str(shots_dir() / "chromedriver.log"), env={**os.environ, **QUIET_ENV})
    drv = webdriver.Chrome(options=opts, service=service)
    drv.set_page_load_timeout(WAIT_S)
    try:
        yield drv
    finally:
        drv.quit()


def _text(drv) -> str:
    return drv.execute_script("return document.body ? document.body.innerText : ''") or ""


def _wait_for(drv, predicate: Callable[[Any], Any], what: str, timeout: float = WAIT_S) -> Any:
    """Poll ``predicate(driver)`` until truthy; else save a screenshot and the page text, and fail."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(drv, timeout, poll_frequency=0.5, ignored_exceptions=(WebDriverException,)).until(
            predicate)
    except Exception:
        stem = "FAILED_" + "".join(c if c.isalnum() else "_" for c in what)
        drv.save_screenshot(str(shots_dir() / f"{stem}.png"))
        text = _text(drv)
        (shots_dir() / f"{stem}.txt").write_text(f"{drv.current_url}\n\n{text}")
        raise AssertionError(f"browser: {what} not seen within {timeout:.0f} s at {drv.current_url} "
                             f"(screenshot {stem}.png); page text:\n{text[-1500:]}") from None


def _click(drv, css: str, what: str) -> None:
    """Click the first visible element matching ``css`` once it is there (a real pointer click)."""
    el = _wait_for(drv, lambda d: next((e for e in d.find_elements("css selector", css) if e.is_displayed()), None),
                   what)
    drv.execute_script("arguments[0].scrollIntoView({block: 'center'})", el)
    el.click()


def _png_width(path: str) -> int:
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">I", head[16:20])[0]  # IHDR width


ML_VIEW = "workflowType=machine_learning"  # the MLflow UI's "Model training" switch, as a URL parameter


@pytest.fixture(scope="module")
def loop_store(demo_store, tmp_path_factory) -> Path:
    """A copy of the demo's store, then a budget sweep (with its own target-only) and a synthetic replay."""
    d, db, _ = demo_store
    root = tmp_path_factory.mktemp("loop")
    shutil.copy(db, root / "mlflow.db")
    if (d / "artifacts").is_dir():
        shutil.copytree(d / "artifacts", root / "artifacts")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "AS2D_NOTEBOOK_EXPERIMENT")}
    for args in (["-m", "experiment=replay", "dataset.n_windows=3", "device=xiaomi_14", "model.budget=3,7",
                  "budget_from=model", "methods=[target_only,as2d]", "hydra.launcher.n_jobs=1",
                  f"hydra.sweep.dir={root / 'sweep'}"],
                 ["experiment=replay", "dataset.n_windows=3", "methods=[target_only,as2d]", f"out_dir={root / 'syn'}"]):
        done = subprocess.run([sys.executable, "-m", "workbench.run", *args, f"tracking.uri={uri}"], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    return root / "mlflow.db"


@pytest.fixture(scope="module")
def mlflow_ui(loop_store) -> Iterator[str]:
    port = _free_port()
    log = shots_dir() / "mlflow_server.log"
    proc = _serve([sys.executable, "-m", "workbench.ui", "--backend-store-uri", f"sqlite:///{loop_store}",
                   "--host", "127.0.0.1", "--port", str(port)], log, cwd=ROOT, env={**os.environ, **QUIET_ENV})
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{base}/health", proc, "mlflow server", log)
        yield base
    finally:
        _stop(proc)


def test_home_then_experiment_lands_on_the_runs_list(browser, mlflow_ui, loop_store):
    """A fresh browser (no workflow chosen) at Home; a click on the demo's experiment opens its runs."""
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{loop_store}")
    exp = client.get_experiment_by_name("as2d-demo")
    (job,) = client.search_runs([exp.experiment_id], "tags.`as2d.role` = 'job'")
    browser.get(f"{mlflow_ui}/")
    link = f'a[href$="#/experiments/{exp.experiment_id}"]'
    _click(browser, link, "the as2d-demo experiment on Home")
    _wait_for(browser, lambda d: "/runs" in d.current_url and job.info.run_name in _text(d).split(),
              "the experiment's runs list, with the demo's job run, after a click from Home")
    assert "/traces" not in browser.current_url and "/overview" not in browser.current_url, browser.current_url
    browser.save_screenshot(str(shots_dir() / "mlflow_home_to_runs.png"))


def test_sweep_parent_shows_its_summary_and_metrics(browser, mlflow_ui, loop_store):
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{loop_store}")
    exp = client.get_experiment_by_name("as2d-replay")
    (parent,) = client.search_runs([exp.experiment_id], "tags.`as2d.role` = 'sweep'")
    assert parent.data.metrics["best_speedup"] > 0 and parent.data.tags["best_config"].startswith("as2d-b")
    ui = f"{mlflow_ui}/#/experiments/{exp.experiment_id}/runs/{parent.info.run_id}"
    browser.get(f"{ui}?{ML_VIEW}")
    _wait_for(browser, lambda d: "best_speedup" in _text(d) and "best speedup" in _text(d),
              "the sweep parent's metrics and description")
    browser.save_screenshot(str(shots_dir() / "mlflow_sweep_parent.png"))
    browser.get(f"{ui}/artifacts/summary.md?{ML_VIEW}")
    _wait_for(browser, lambda d: "sweep summary" in _text(d) and parent.data.tags["best_config"] in _text(d),
              "the sweep summary previewed on the parent")
    browser.save_screenshot(str(shots_dir() / "mlflow_sweep_summary.png"))


def test_mlflow_ui_lists_runs_with_tps_and_previews_a_figure(browser, mlflow_ui, loop_store, tmp_path):
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{loop_store}")
    exp = client.get_experiment_by_name("as2d-demo")
    (job,) = client.search_runs([exp.experiment_id], "tags.`as2d.role` = 'job'")
    kids = client.search_runs([exp.experiment_id], "tags.`as2d.role` = 'config'", max_results=500)
    kid = next(k for k in kids if k.data.params["method"] == "as2d" and k.data.params["clock"] == "replay")
    ui = f"{mlflow_ui}/#/experiments/{exp.experiment_id}"

    # MLflow 3.17 picks its view from the UI's workflow switch (GenAI by default, kept in the browser),
    # not from the experiment's kind tag; the link the workbench prints and the README give selects
    # "Model training", which opens the experiment on its runs (the job run, configuration runs nested).
    browser.get(f"{ui}?{ML_VIEW}")
    _wait_for(browser, lambda d: job.info.run_name in _text(d).split() and "matching runs" in _text(d),
              "demo experiment opening on its runs list")
    assert "/runs" in browser.current_url and "/traces" not in browser.current_url, browser.current_url
    browser.save_screenshot(str(shots_dir() / "mlflow_experiment.png"))

    # The configuration runs side by side: filtered to the child runs, then sorted by `tps` through the
    # Sort menu, which adds the `tps` column and lists the children flat -- what a researcher comparing
    # devices and methods does. (Sorted by date, MLflow nests children under their collapsed parent.)
    search = urllib.parse.urlencode({"searchFilter": "tags.`as2d.role` = 'config'"}, quote_via=urllib.parse.quote)
    browser.get(f"{ui}/runs?{ML_VIEW}&{search}")
    _wait_for(browser, lambda d: "matching runs" in _text(d), "the filtered runs list")
    _click(browser, '[data-testid="sort-select-dropdown"]', "the runs list's Sort menu")
    _click(browser, '[data-testid="sort-select-tps"]', "tps in the Sort menu")
    tps_cells = '.ag-cell[col-id="metrics.`tps`"]'
    values = _wait_for(browser, lambda d: f"{len(kids)} matching runs" in _text(d) and [
        c.text for c in d.find_elements("css selector", tps_cells) if c.text.strip()], "a tps column with values")
    # Every value shown is a child run's logged tps (the UI prints them in full; rows may be virtualised).
    logged = {round(k.data.metrics["tps"], 6) for k in kids}
    shown = {round(float(v), 6) for v in values}
    assert shown <= logged and len(shown) >= min(len(logged), 10), f"tps cells {sorted(shown)} vs logged {logged}"
    browser.save_screenshot(str(shots_dir() / "mlflow_runs_tps.png"))

    # A child run's page shows the plain `tps` metric.
    browser.get(f"{ui}/runs/{kid.info.run_id}?{ML_VIEW}")
    _wait_for(browser, lambda d: kid.info.run_name in _text(d) and "tps" in _text(d).split(),
              "child run page with its tps metric")
    browser.save_screenshot(str(shots_dir() / "mlflow_child_run.png"))

    # The job run's figure previews as the very image that was logged (same pixel width).
    art = "figures/tps_cdf.png"
    width = _png_width(client.download_artifacts(job.info.run_id, art, str(tmp_path)))
    browser.get(f"{ui}/runs/{job.info.run_id}/artifacts/{art}?{ML_VIEW}")
    _wait_for(browser, lambda d: d.execute_script(
        "return [...document.images].some(i => i.complete && i.naturalWidth === arguments[0])", width),
        f"figure artifact {art} previewed ({width} px wide)")
    browser.save_screenshot(str(shots_dir() / "mlflow_artifact_preview.png"))


_LAB: dict[str, Path] = {}  # where JupyterLab runs the notebook (its figures/ land there)


def jupyter_lab_dir() -> Path:
    return _LAB["root"]


@pytest.fixture(scope="module")
def jupyter_lab(loop_store, tmp_path_factory) -> Iterator[str]:
    db = loop_store
    root = tmp_path_factory.mktemp("lab")
    _LAB["root"] = root
    state = tmp_path_factory.mktemp("lab-state")  # workspaces and settings: none from earlier sessions
    shutil.copy(ROOT / "notebooks" / "fig5_tps_cdf.ipynb", root)  # the repo's copy stays output-free
    port = _free_port()
    env = {**os.environ, **QUIET_ENV, "MLFLOW_TRACKING_URI": f"sqlite:///{db}",
           "AS2D_FIGURES_DIR": str(root / "figures"), "PYTHONPATH": str(ROOT), "JUPYTER_RUNTIME_DIR": str(state)}
    env.pop("AS2D_NOTEBOOK_EXPERIMENT", None)  # the notebook must find the demo's runs by itself
    log = shots_dir() / "jupyterlab.log"
    proc = _serve([sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
                   "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
                   "--ServerApp.allow_root=True",  # CI runs as root; Jupyter refuses to start as root without it
                   f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
                   f"--LabApp.workspaces_dir={state / 'workspaces'}",
                   f"--LabApp.user_settings_dir={state / 'settings'}",
                   "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
                  log, cwd=root, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{base}/api/status", proc, "jupyter lab", log)
        yield base
    finally:
        _stop(proc)


KERNEL_READY = """
const a = window.jupyterapp; if (!a) return false;
const w = a.shell.currentWidget;
const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
return !!(k && k.connectionStatus === 'connected' && k.status === 'idle');
"""
# The notebook's outputs, read from the model (not the DOM, which JupyterLab virtualises off-screen).
OUTPUTS = """
const nb = window.jupyterapp.shell.currentWidget.content;
const cells = []; for (let i = 0; i < nb.model.cells.length; i++) cells.push(nb.model.cells.get(i));
const code = cells.filter(c => c.type === 'code');
return {
  counts: code.map(c => c.executionCount),
  text: code.flatMap(c => c.outputs.toJSON()).map(o => [].concat(o.text || (o.data && o.data['text/plain']) || [],
        o.ename ? [o.ename + ': ' + o.evalue] : []).join('')).join('\\n'),
  png: code.flatMap(c => c.outputs.toJSON()).filter(o => o.data && o.data['image/png']).length,
  errors: code.flatMap(c => c.outputs.toJSON()).filter(o => o.output_type === 'error').length,
};
"""


def test_jupyterlab_runs_fig5_and_renders_the_chart_offline(browser, jupyter_lab):
    browser.get(f"{jupyter_lab}/lab/tree/fig5_tps_cdf.ipynb")
    _wait_for(browser, lambda d: d.execute_script(KERNEL_READY), "fig5_tps_cdf open with an idle kernel")
    browser.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    # Done when every code cell has run and the last one printed the files it wrote.
    out = _wait_for(browser, lambda d: (lambda o: o if all(o["counts"]) and "wrote " in o["text"] else None)(
        d.execute_script(OUTPUTS)), "fig5_tps_cdf run to its last cell")
    assert not out["errors"] and "Traceback" not in out["text"], out["text"][-2000:]
    assert "no runs" not in out["text"] and "IProgress" not in out["text"], out["text"][-2000:]
    assert out["png"] >= 2, f"expected the two fig5 charts as PNG outputs, got {out['png']}"
    # After a sweep and a synthetic run, the notebook still draws the demo, and says so: printed, and in the
    # title of the chart it wrote.
    assert "selection: latest `make demo` run" in out["text"] and "SYNTHETIC" not in out["text"], out["text"][-2000:]
    svg = next(Path(jupyter_lab_dir()).glob("figures/fig5_tps_cdf.svg")).read_text()
    assert "latest `make demo` run" in svg and "as2d-demo" in svg and "speech" in svg
    # And the browser shows them: images that actually decoded, with no Vega-from-CDN failure.
    _wait_for(browser, lambda d: d.execute_script(
        "return [...document.querySelectorAll('.jp-OutputArea-output img')]"
        ".filter(i => i.complete && i.naturalWidth > 200).length") >= 1, "a rendered fig5 chart")
    browser.execute_script("document.querySelector('.jp-OutputArea-output img').scrollIntoView({block: 'center'})")
    browser.save_screenshot(str(shots_dir() / "jupyterlab_fig5.png"))
    assert "Error loading script" not in _text(browser)
