"""Fixtures shared by the end-to-end tests: run ``python -m plcore`` in a scratch directory and
start an MLflow server (``mlflow ui`` / ``mlflow server``) on a free port of 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

TIMEOUT = 300
#: ``mlflow ui`` needs ~7 s to start on two idle cores (~25 s when they are busy)
SERVER_START_TIMEOUT = 180


def run_plcore(args, cwd, env_extra=None, check=True, timeout=TIMEOUT):
    """``python -m plcore ARGS`` in ``cwd`` (no inherited ``MLFLOW_TRACKING_URI``)."""
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-m", "plcore", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def run_plcore_batch(cases, tmp, timeout=TIMEOUT):
    """``python -m plcore`` for each ``(args, cwd, env_extra)`` of ``cases``, all in one process
    (``tests/cli_batch.py``); returns one :class:`subprocess.CompletedProcess` per case."""
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    spec = [{"args": [str(a) for a in args], "cwd": str(cwd), "env": env_extra or {}} for args, cwd, env_extra in cases]
    cases_path, results_path = Path(tmp) / "cli-cases.json", Path(tmp) / "cli-results.json"
    cases_path.write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("cli_batch.py")), str(cases_path),
                           str(results_path)], env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"tests/cli_batch.py failed: exit {proc.returncode}\n{proc.stderr}")
    return [subprocess.CompletedProcess([sys.executable, "-m", "plcore", *c["args"]], r["returncode"], r["stdout"],
                                        r["stderr"]) for c, r in zip(spec, json.loads(results_path.read_text()))]


def browser_unavailable(reason: str):
    """Skip a browser test where the browser is missing; fail it under ``PLCORE_REQUIRE_BROWSER=1`` (CI)."""
    if os.environ.get("PLCORE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"PLCORE_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


def chromium_executable() -> str:
    """Debian's chromium, for Playwright's ``executable_path`` (never ``playwright install``)."""
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        browser_unavailable("Debian's chromium is not installed (apt-get install --no-install-recommends chromium)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MlflowServer:
    """A running ``mlflow ui|server`` subprocess; ``url`` is its base address."""

    def __init__(self, proc: subprocess.Popen, url: str, log: Path):
        self.proc, self.url, self.log = proc, url, log

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


def start_mlflow_server(backend_uri: str, cwd: Path, *, command: str = "ui", extra_args=(),
                        timeout: float = SERVER_START_TIMEOUT) -> MlflowServer:
    """Start ``mlflow COMMAND --backend-store-uri URI`` on 127.0.0.1 and wait until ``/health`` answers.

    ``MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false`` and ``--workers 1`` cut the start-up on two
    cores from ~25 s to ~7 s (DESIGN.md section 8). The log goes to ``cwd/mlflow-server.log``.
    """
    port = free_port()
    env = dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false")
    env.pop("MLFLOW_TRACKING_URI", None)
    mlflow_bin = os.path.join(os.path.dirname(sys.executable), "mlflow")
    log = Path(cwd) / "mlflow-server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([mlflow_bin, command, "--backend-store-uri", backend_uri, *extra_args,
                                 "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                                cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = MlflowServer(proc, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + timeout
    while True:  # a subprocess offers nothing to wait on but its port
        try:
            with urllib.request.urlopen(server.url + "/health", timeout=2) as r:
                if r.status == 200:
                    return server
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise AssertionError(f"mlflow {command} did not start within {timeout:.0f} s "
                                 f"(exit code {proc.poll()}):\n{server.log_tail()}")
        time.sleep(0.5)


@pytest.fixture
def mlflow_server():
    """Factory fixture: ``mlflow_server(backend_uri, cwd, command="ui", extra_args=())``;
    every server it started is stopped at teardown."""
    started = []

    def start(backend_uri, cwd, **kwargs):
        server = start_mlflow_server(backend_uri, cwd, **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def benchmark_module():
    """Factory fixture: ``benchmark_module("field")`` imports ``benchmarks/field.py`` (a script,
    not a package) as a module; it leaves ``sys.modules`` at the end of the test module."""
    import importlib.util

    loaded = []

    def load(name: str):
        path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"plcore_bench_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        loaded.append(spec.name)
        spec.loader.exec_module(mod)
        return mod

    yield load
    for name in loaded:
        sys.modules.pop(name, None)


@pytest.fixture
def model_server():
    """Factory fixture: ``model_server(model_id, cwd)`` starts MLflow's scoring server
    (``mlflow models serve -m models:/<model_id> --env-manager local``, uvicorn from the lock) for
    the store ``cwd/mlflow.db`` on a free port of 127.0.0.1 and returns its base address once
    ``/ping`` answers; every server it started is stopped at teardown (its process group)."""
    import signal

    started = []

    def start(model_id: str, cwd: Path, timeout: float = SERVER_START_TIMEOUT) -> str:
        port, bindir = free_port(), os.path.dirname(sys.executable)
        env = dict(os.environ, MLFLOW_TRACKING_URI=f"sqlite:///{Path(cwd) / 'mlflow.db'}",
                   PATH=bindir + os.pathsep + os.environ.get("PATH", ""))  # MLflow starts `uvicorn` from PATH
        log = Path(cwd) / "model-server.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([os.path.join(bindir, "mlflow"), "models", "serve", "-m", f"models:/{model_id}",
                                     "--env-manager", "local", "-h", "127.0.0.1", "-p", str(port)],
                                    cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        started.append(proc)
        url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + timeout
        while True:  # a subprocess offers nothing to wait on but its port
            try:
                with urllib.request.urlopen(url + "/ping", timeout=2):
                    return url
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"mlflow models serve did not start within {timeout:.0f} s "
                                         f"(exit code {proc.poll()}):\n{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.5)

    yield start
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


@pytest.fixture
def chromium_browser():
    """Debian's headless chromium under Playwright (``browser`` tests): skipped where it is
    missing or does not start, failed instead under ``PLCORE_REQUIRE_BROWSER=1`` (CI)."""
    executable = chromium_executable()
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_unavailable("playwright is not installed")
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=executable, headless=True)
        except PlaywrightError as err:
            browser_unavailable(f"chromium at {executable} does not start under Playwright: {err}")
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def plcore_cli():
    """``plcore_cli(args, cwd, env_extra=None, check=True)``: :func:`run_plcore`."""
    return run_plcore


@pytest.fixture(scope="session")
def plcore_cli_batch():
    """``plcore_cli_batch(cases, tmp, timeout)``: :func:`run_plcore_batch`."""
    return run_plcore_batch


_PROBE = '''
import json, os, time, uuid
from hydra.experimental.callback import Callback


class Probe(Callback):
    """Records which process ran what, and when, into $PLCORE_PROBE_DIR."""

    def _write(self, kind, config):
        rec = {"kind": kind, "pid": os.getpid(), "time": time.time()}
        if kind != "multirun":
            rec["num"] = int(config.hydra.job.num)
        path = os.path.join(os.environ["PLCORE_PROBE_DIR"], f"{kind}-{uuid.uuid4().hex}.json")
        with open(path, "w") as f:
            json.dump(rec, f)

    def on_multirun_start(self, config, **kwargs):
        self._write("multirun", config)

    def on_job_start(self, config, **kwargs):
        self._write("job_start", config)

    def on_job_end(self, config, job_return, **kwargs):
        self._write("job_end", config)
'''


class JobProbe:
    """A Hydra callback added from the command line that records pid and time at multirun start
    (launching process) and at job start / end (the process that runs the job)."""

    override = "+hydra.callbacks.probe._target_=plcore_probe.Probe"

    def __init__(self, root: Path):
        self.dir = root / "probe"
        self.dir.mkdir(parents=True)
        (root / "probe_pkg").mkdir()
        (root / "probe_pkg" / "plcore_probe.py").write_text(_PROBE)
        #: merge into the environment of ``python -m plcore`` (workers inherit it)
        self.env = {"PYTHONPATH": str(root / "probe_pkg"), "PLCORE_PROBE_DIR": str(self.dir)}

    def records(self):
        recs = [json.loads(p.read_text()) for p in self.dir.glob("*.json")]
        (parent,) = [r for r in recs if r["kind"] == "multirun"]
        starts = {r["num"]: r for r in recs if r["kind"] == "job_start"}
        ends = {r["num"]: r for r in recs if r["kind"] == "job_end"}
        return parent, starts, ends

    def assert_parallel(self, n_jobs: int):
        """Each job ran in its own process (not the launching one) and all jobs overlapped in time."""
        parent, starts, ends = self.records()
        assert sorted(starts) == sorted(ends) == list(range(n_jobs)), (starts, ends)
        pids = {r["pid"] for r in starts.values()}
        assert len(pids) == n_jobs, f"jobs shared a process: {starts}"
        assert parent["pid"] not in pids, "a job ran in the launching process"
        assert all(ends[i]["pid"] == starts[i]["pid"] for i in starts)
        assert max(r["time"] for r in starts.values()) < min(r["time"] for r in ends.values()), \
            f"the jobs ran one after the other: {starts} {ends}"


@pytest.fixture
def job_probe(tmp_path):
    """:class:`JobProbe` in ``tmp_path``: add ``job_probe.override`` to the command line and
    ``job_probe.env`` to its environment."""
    return JobProbe(tmp_path)
