"""The team set-up of docs/scale_out.md, end to end: Debian's PostgreSQL on 127.0.0.1, an
``mlflow server`` with that backend, a local artifact root and MLflow's basic-auth app, and a
parallel sweep logging to it with a user's credentials.

``.ci/run`` installs PostgreSQL (Debian's ``postgresql``) and sets ``PLCORE_REQUIRE_POSTGRES=1``,
so CI runs this test; elsewhere it skips, with the command that installs the server.
"""

from __future__ import annotations

import base64
import socket
import glob
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

INSTALL = "apt-get install -y --no-install-recommends postgresql"
#: the sweep of tests/test_scale_out.py: two jobs in two joblib worker processes
SWEEP = ["-m", "+learner=plknn", "learner.k=5,10", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
         "protocol.n_splits=3", "progress=false"]
THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
USER, PASSWORD = "researcher", "plcore-team-pw-1"
ADMIN_PASSWORD = "plcore-admin-pw-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _as_postgres(cmd):
    """Run a server command as the ``postgres`` user when we are root (initdb refuses root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


@pytest.fixture
def postgres():
    """A throwaway PostgreSQL cluster on 127.0.0.1: yields the SQLAlchemy URI of database ``mlflow``."""
    bin_dir = _pg_bin()
    if bin_dir is None:
        if os.environ.get("PLCORE_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL is not installed and PLCORE_REQUIRE_POSTGRES=1 (CI): {INSTALL}")
        pytest.skip(f"PostgreSQL is not installed (Debian: {INSTALL})")
    root = Path(tempfile.mkdtemp(prefix="plcore-pg-"))        # not under pytest's 0700 tmp dir
    root.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", free_port()
    run = dict(check=True, capture_output=True, text=True, timeout=120)
    subprocess.run(_as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "plcore",
                                 "--no-sync"]), **run)
    subprocess.run(_as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-l", str(root / "server.log"),
                                 "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"]), **run)
    try:
        subprocess.run([str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "plcore", "mlflow"],
                       **run)
        yield f"postgresql+psycopg2://plcore@127.0.0.1:{port}/mlflow"
    finally:
        subprocess.run(_as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def _api(url, path, body=None, auth=None):
    """``(status, json)`` of an MLflow REST call, with basic-auth ``(user, password)`` or none."""
    req = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST" if body else "GET")
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, {}


def test_sweep_logs_to_postgresql_through_an_authenticated_server(tmp_path, postgres, mlflow_server, plcore_cli,
                                                                   monkeypatch):
    import psycopg2

    import mlflow

    srv, work, artifacts = tmp_path / "server", tmp_path / "client", tmp_path / "artifacts"
    for d in (srv, work, artifacts):
        d.mkdir()
    (srv / "auth.ini").write_text(
        "[mlflow]\ndefault_permission = READ\n"
        f"database_uri = sqlite:///{srv / 'basic_auth.db'}\n"
        f"admin_username = admin\nadmin_password = {ADMIN_PASSWORD}\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
        "auth_cache_ttl_seconds = 60\n")   # checked passwords cached a minute: 7x the write rate
    monkeypatch.setenv("MLFLOW_AUTH_CONFIG_PATH", str(srv / "auth.ini"))
    monkeypatch.setenv("MLFLOW_FLASK_SERVER_SECRET_KEY", os.urandom(16).hex())   # CSRF of the auth app
    start = time.perf_counter()
    server = mlflow_server(postgres, srv, command="server", timeout=180,
                           extra_args=["--app-name", "basic-auth", "--artifacts-destination", str(artifacts)])
    started_s = time.perf_counter() - start
    # the team's account, made by the admin; a client without (or with wrong) credentials is refused
    status, _ = _api(server.url, "/api/2.0/mlflow/users/create", {"username": USER, "password": PASSWORD},
                     auth=("admin", ADMIN_PASSWORD))
    assert status == 200
    assert _api(server.url, "/api/2.0/mlflow/experiments/search?max_results=5")[0] == 401
    assert _api(server.url, "/api/2.0/mlflow/experiments/search?max_results=5", auth=(USER, "wrong"))[0] == 401
    assert _api(server.url, "/api/2.0/mlflow/experiments/search?max_results=5", auth=(USER, PASSWORD))[0] == 200

    env = dict(THREADS, MLFLOW_TRACKING_URI=server.url, MLFLOW_TRACKING_USERNAME=USER,
               MLFLOW_TRACKING_PASSWORD=PASSWORD)
    wrong = plcore_cli(["protocol.n_splits=2", "progress=false"], work, dict(env, MLFLOW_TRACKING_PASSWORD="wrong"),
                       check=False)   # named as such, before any data is loaded (issue 42)
    assert wrong.returncode == 2 and "n=" not in wrong.stdout, wrong
    assert wrong.stderr.strip().splitlines() == [
        f"error: tracking server {server.url} refused the credentials (user '{USER}'; HTTP 401): set "
        "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) to an account of the "
        "server, or run with tracking=none"], wrong.stderr
    start = time.perf_counter()
    plcore_cli(SWEEP, work, env)
    sweep_s = time.perf_counter() - start
    assert not (work / "mlflow.db").exists() and not (work / "mlruns").exists(), "the client wrote locally"

    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", USER)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)
    client = mlflow.tracking.MlflowClient(tracking_uri=server.url)
    runs = client.search_runs([client.get_experiment_by_name("plcore").experiment_id])
    assert sorted(r.data.params["learner.k"] for r in runs) == ["10", "5"]
    assert {r.info.status for r in runs} == {"FINISHED"}
    ids = [r.info.run_id for r in runs]
    with psycopg2.connect(postgres.replace("+psycopg2", "")) as con, con.cursor() as cur:   # the rows are in PostgreSQL itself
        cur.execute("SELECT status FROM runs WHERE run_uuid = ANY(%s)", (ids,))
        assert sorted(s for (s,) in cur.fetchall()) == ["FINISHED", "FINISHED"]
        cur.execute("SELECT run_uuid, COUNT(*) FROM metrics WHERE run_uuid = ANY(%s) AND key = 'fold/accuracy' "
                    "GROUP BY run_uuid", (ids,))
        assert sorted(n for _, n in cur.fetchall()) == [3, 3]          # one row per fold and run
        cur.execute("SELECT COUNT(*) FROM metrics WHERE run_uuid = ANY(%s)", (ids,))
        n_metric_rows = cur.fetchone()[0]
    plots = sorted(artifacts.rglob("plots/accuracy_per_fold.png"))
    assert len(plots) == 2 and all(p.stat().st_size > 0 for p in plots)
    print(f"server start {started_s:.1f} s; 2-job sweep {sweep_s:.1f} s; {n_metric_rows} metric rows in PostgreSQL")
