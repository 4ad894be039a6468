"""How many runs per second a tracking server absorbs: the write rate behind docs/scale_out.md's
"big sweep" estimate.

Run from the repository root against a running server (docs/scale_out.md, "A team", starts
one: PostgreSQL behind ``mlflow server --app-name basic-auth``)::

    MLFLOW_TRACKING_USERNAME=... MLFLOW_TRACKING_PASSWORD=... \\
    .venv/bin/python benchmarks/tracking_throughput.py --tracking-uri http://127.0.0.1:5000 \\
        [--runs 200] [--clients 1 4 16]

Each simulated run writes what one plcore 10-fold run writes: a run with 12 tags and 30
parameters, 10 folds x 5 step metrics plus 10 summary metrics (60 metric rows, in batches as
plcore logs them: one batch per fold and one for the summary), two artifacts of 20 kB (the
config and a plot) through the server's proxied artifact store, then the end of the run.
``clients`` processes write concurrently (a cluster's jobs finishing at once). Prints one
markdown row per client count: runs per second, metric rows per second and the median
seconds one client spends per run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from multiprocessing import Pool

PAYLOAD = os.urandom(20_000)


def _one_run(client, experiment_id, workdir, i):
    from mlflow.entities import Metric, Param, RunTag

    start = time.perf_counter()
    run = client.create_run(experiment_id, tags={f"tag{j}": f"value{j}" for j in range(12)})
    rid = run.info.run_id
    client.log_batch(rid, params=[Param(f"param.{j}", str(j)) for j in range(30)])
    now = int(time.time() * 1000)
    for fold in range(10):
        client.log_batch(rid, metrics=[Metric(f"fold/m{j}", 0.5 + 0.01 * fold, now, fold) for j in range(5)])
    client.log_batch(rid, metrics=[Metric(f"summary{j}", 0.5, now, 0) for j in range(10)])
    for name in ("config.yaml", "accuracy_per_fold.png"):
        path = os.path.join(workdir, f"{i}-{name}")
        with open(path, "wb") as f:
            f.write(PAYLOAD)
        client.log_artifact(rid, path)
    client.set_terminated(rid, "FINISHED")
    return time.perf_counter() - start


def _client_loop(args):
    uri, experiment_id, n, seed = args
    import mlflow

    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    with tempfile.TemporaryDirectory() as workdir:
        return [_one_run(client, experiment_id, workdir, seed * 100_000 + i) for i in range(n)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tracking-uri", required=True)
    ap.add_argument("--runs", type=int, default=200, help="runs per measurement (split over the clients)")
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    args = ap.parse_args(argv)
    import mlflow

    client = mlflow.tracking.MlflowClient(tracking_uri=args.tracking_uri)
    name = f"throughput-{int(time.time())}"
    experiment_id = client.create_experiment(name)
    print(f"server {args.tracking_uri}, experiment {name}; each run: 12 tags, 30 params, 60 metric rows "
          "in 11 batches, 2 artifacts of 20 kB\n")
    print("| clients | runs | wall s | runs/s | metric rows/s | median s per run (one client) |")
    print("|---|---|---|---|---|---|")
    for n_clients in args.clients:
        per = max(1, args.runs // n_clients)
        start = time.perf_counter()
        with Pool(n_clients) as pool:
            times = [t for part in pool.map(_client_loop, [(args.tracking_uri, experiment_id, per, k)
                                                           for k in range(n_clients)]) for t in part]
        wall = time.perf_counter() - start
        print(f"| {n_clients} | {len(times)} | {wall:.1f} | {len(times) / wall:.1f} | {60 * len(times) / wall:.0f} "
              f"| {statistics.median(times):.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
