"""The researcher's loop in a real browser: headless Chromium (Selenium) on the reduced demo's store.

* a real ``mlflow server`` started here shows the demo experiment's runs (not GenAI mode), a ``tps``
  column for the configuration child runs, and previews a figure artifact;
* JupyterLab started here opens ``fig5_tps_cdf``, runs it, and shows a rendered chart (an image made
  offline by vl-convert) with no "Error loading script".

Screenshots go to ``$AS2D_TEST_ARTIFACTS/browser`` (default ``outputs/test-artifacts/browser``).
Every server started here is stopped here.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
CHROME_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1600,1000")


def shots_dir() -> Path:
    d = Path(os.environ.get("AS2D_TEST_ARTIFACTS") or ROOT / "outputs" / "test-artifacts") / "browser"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, what: str, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode} before serving {url}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"{what} did not serve {url} within {timeout:.0f} s")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture(scope="module")
def browser() -> Iterator:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    assert binary and driver_path, "install Debian chromium and chromium-driver (scripts/setup.sh does, as root)"
    opts.binary_location = binary
    profile = Path(os.environ.get("TMPDIR", "/tmp")) / f"as2d-chromium-{os.getpid()}-{time.time_ns()}"
    for flag in (*CHROME_FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    drv = webdriver.Chrome(options=opts, service=Service(driver_path))
    drv.set_page_load_timeout(300)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def mlflow_ui(demo_store) -> Iterator[str]:
    _, db, _ = demo_store
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{db}",
                             "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{base}/health", proc, "mlflow server", timeout=400)
        yield base
    finally:
        _stop(proc)


def _wait_for(drv, predicate, timeout: float, what: str):
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(drv, timeout, poll_frequency=0.5).until(lambda d: predicate(d))
    except Exception:
        drv.save_screenshot(str(shots_dir() / f"FAILED_{what.replace(' ', '_')}.png"))
        raise AssertionError(f"browser: {what} not seen within {timeout:.0f} s (screenshot saved)") from None


def _text(drv) -> str:
    return drv.execute_script("return document.body ? document.body.innerText : ''") or ""


def test_mlflow_ui_lists_runs_with_tps_and_previews_a_figure(browser, mlflow_ui, demo_store):
    from mlflow import MlflowClient

    _, db, _ = demo_store
    client = MlflowClient(f"sqlite:///{db}")
    exp = client.get_experiment_by_name("as2d-demo")
    (job,) = client.search_runs([exp.experiment_id], "tags.`as2d.role` = 'job'")
    kids = client.search_runs([exp.experiment_id], "tags.`as2d.role` = 'config'", max_results=500)
    kid = next(k for k in kids if k.data.params["method"] == "as2d" and k.data.params["clock"] == "replay")

    # The experiment opens on its runs (not the GenAI traces view), the child runs listed by name.
    browser.get(f"{mlflow_ui}/#/experiments/{exp.experiment_id}/runs")
    _wait_for(browser, lambda d: "demo" in _text(d) and kid.info.run_name in _text(d), 240, "demo runs list")
    assert "No data" not in _text(browser) or "Run Name" in _text(browser)
    browser.save_screenshot(str(shots_dir() / "mlflow_runs.png"))

    # A child run's page shows the plain `tps` metric with its value.
    browser.get(f"{mlflow_ui}/#/experiments/{exp.experiment_id}/runs/{kid.info.run_id}")
    _wait_for(browser, lambda d: "tps" in _text(d).split() or "\ntps" in _text(d), 240, "child run tps metric")
    browser.save_screenshot(str(shots_dir() / "mlflow_child_run.png"))

    # The job run's figure artifact previews as an image that actually loaded.
    browser.get(f"{mlflow_ui}/#/experiments/{exp.experiment_id}/runs/{job.info.run_id}/artifacts/figures/tps_cdf.png")
    _wait_for(browser, lambda d: d.execute_script(
        "return [...document.images].some(i => i.complete && i.naturalWidth > 200 && /tps_cdf/.test(i.src))"),
        240, "figure artifact preview")
    browser.save_screenshot(str(shots_dir() / "mlflow_artifact_preview.png"))


@pytest.fixture(scope="module")
def jupyter_lab(demo_store, tmp_path_factory) -> Iterator[str]:
    _, db, _ = demo_store
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "notebooks" / "fig5_tps_cdf.ipynb", root)  # the repo's copy stays output-free
    port = _free_port()
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{db}", "AS2D_FIGURES_DIR": str(root / "figures"),
           "PYTHONPATH": str(ROOT)}
    env.pop("AS2D_NOTEBOOK_EXPERIMENT", None)  # the notebook must find the demo's runs by itself
    proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
                             "--ip=127.0.0.1", "--ServerApp.token=", "--ServerApp.password=",
                             "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={root}",
                             "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=",
                             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
                            cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{base}/api/status", proc, "jupyter lab", timeout=400)
        yield base
    finally:
        _stop(proc)


def test_jupyterlab_runs_fig5_and_renders_the_chart_offline(browser, jupyter_lab):
    browser.get(f"{jupyter_lab}/lab/tree/fig5_tps_cdf.ipynb")
    _wait_for(browser, lambda d: d.execute_script(
        "const a = window.jupyterapp; if (!a) return false;"
        "const w = a.shell.currentWidget; return !!(w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel && w.sessionContext.session.kernel.connectionStatus === 'connected')"),
        300, "notebook with a connected kernel")
    browser.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    # Done when the last cell printed the exported files; the charts are images in the output area.
    _wait_for(browser, lambda d: "wrote " in _text(d) and d.execute_script(
        "return [...document.querySelectorAll('.jp-OutputArea-output img')]"
        ".filter(i => i.complete && i.naturalWidth > 200).length") >= 2, 420, "rendered fig5 charts")
    text = _text(browser)
    browser.save_screenshot(str(shots_dir() / "jupyterlab_fig5.png"))
    assert "Error loading script" not in text
    assert "no runs" not in text and "Traceback" not in text
    assert "IProgress" not in text
