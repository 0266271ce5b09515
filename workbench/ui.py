"""The MLflow UI on the workbench's store, opening every experiment on its runs: ``python -m workbench.ui``.

MLflow 3.17 picks the view an experiment opens in from the UI's workflow switch ("GenAI" or "Model
training", top left), which the browser keeps in ``localStorage`` under ``mlflow.workflowType_v1``;
unset, it is GenAI, whose traces dashboard shows "No data" for a workbench experiment. (Earlier
MLflow 3 releases read the experiment's ``mlflow.experimentKind`` tag instead; ``workbench.tracking``
still sets it.) This is MLflow's own server with one change: the page it serves records "Model
training" as this browser's choice when the browser has made none, so Home -> an experiment lands on
its runs list. The switch still works, and a choice made there is kept.

``python -m workbench.ui [--backend-store-uri URI] [--host H] [--port P]``; the store defaults to the
workbench's (``MLFLOW_TRACKING_URI``, else ``sqlite:///mlruns/mlflow.db``). ``mlflow server --app-name
as2d`` serves the same app where the package's entry point is installed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

WORKFLOW_KEY = "mlflow.workflowType_v1"  # MLflow's useLocalStorage key ("<key>_v<version>")
WORKFLOW = "machine_learning"  # the switch's "Model training"
SEED = (f"<script>try{{if(localStorage.getItem('{WORKFLOW_KEY}')===null)"
        f"localStorage.setItem('{WORKFLOW_KEY}',JSON.stringify('{WORKFLOW}'))}}catch(e){{}}</script>")


def index_html(static_folder: str | Path) -> str:
    """MLflow's ``index.html`` with the seed script first in ``<head>``, before the app's own scripts."""
    page = (Path(static_folder) / "index.html").read_text()
    return page.replace("<head>", "<head>" + SEED, 1)


def _patched_flask_app():
    from flask import Response
    from mlflow.server import app as flask_app

    def serve() -> Response:
        return Response(index_html(flask_app.static_folder), mimetype="text/html")

    flask_app.view_functions["serve"] = serve  # the route MLflow serves its page from ("/")
    return flask_app


def create_app():
    """The ASGI app ``mlflow server`` would run, serving the seeded page."""
    from mlflow.server.fastapi_app import create_fastapi_app

    return create_fastapi_app(_patched_flask_app())


def __getattr__(name: str):
    if name == "app":  # built on first use: importing this module must not start MLflow's server state
        return create_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workbench.ui", description=__doc__.splitlines()[0])
    ap.add_argument("--backend-store-uri", help="tracking store (default: MLFLOW_TRACKING_URI, else mlruns/mlflow.db)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=5000)
    args = ap.parse_args(argv)
    import uvicorn
    from mlflow.server import ARTIFACTS_DESTINATION_ENV_VAR, BACKEND_STORE_URI_ENV_VAR, SERVE_ARTIFACTS_ENV_VAR

    from workbench.tracking import artifact_root, prepare_store, tracking_uri

    uri = tracking_uri(".", args.backend_store_uri)
    prepare_store(uri)  # creates or migrates the schema under the store lock; a copied store finds its files
    # What `mlflow server` hands its workers: the store, and artifacts served beside a local store.
    os.environ[BACKEND_STORE_URI_ENV_VAR] = uri
    os.environ[SERVE_ARTIFACTS_ENV_VAR] = "true"
    os.environ.setdefault(ARTIFACTS_DESTINATION_ENV_VAR, str(artifact_root(uri)))
    print(f"MLflow UI on {uri}: open http://{args.host}:{args.port}/ (experiments open on their runs)", flush=True)
    uvicorn.run("workbench.ui:app", host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
