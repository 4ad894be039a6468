"""``python -m plcore predict``'s peak memory against the size of the file it reads (issue 71, item 5).

Run from the repository root::

    .venv/bin/python benchmarks/predict_memory.py [--rows 100000 1000000 3000000] [--whole-up-to 3000000]

Trains one small model once (PL-KNN on 300 rows of 8 numeric features and candidate sets, tracked
in a temporary folder), writes CSV files of new rows of the sizes asked for (8 features and an id
column), and runs ``predict id_column=id`` on each in a fresh process, twice: in pieces (plcore's
default, :data:`plcore.run.predict.CHUNK_CELLS`) and with the whole file read at once
(``CHUNK_CELLS = None``, the path before streaming), for files of at most ``--whole-up-to`` rows.
Each process's peak resident memory is its own (``VmHWM`` of ``/proc/self/status``, Linux:
``ru_maxrss`` of a child would keep the size of the parent it was forked from). Prints one row per file: rows, file MB, then for each path its peak MB,
peak / file and seconds, and the ratio of the two peaks; the two outputs are compared byte for byte.
A first line gives the peak of ``predict`` on a file of 10 rows: what any run costs, whatever the file.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

NAMES = np.array(["cat", "dog", "fox", "owl"])
FEATURES = [f"f{j}" for j in range(8)]
_CHILD = """
import sys
from plcore.run import predict
predict.CHUNK_CELLS = {cells}
try:
    code = predict.main(sys.argv[1:])
finally:  # this process's own peak: VmHWM starts afresh at exec, unlike ru_maxrss (the parent's size at fork)
    with open("/proc/self/status") as fh, open({hwm!r}, "w") as out:
        out.write(next(line for line in fh if line.startswith("VmHWM:")).split()[1])
sys.exit(code)
"""


def _train(folder: Path) -> str:
    """The run id of a PL-KNN model trained on ``train.csv`` (300 rows) in ``folder``."""
    import mlflow

    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, size=300)
    X = rng.normal(size=(300, len(FEATURES))) + y[:, None]
    S = (rng.random((300, 4)) < 0.3) | (np.arange(4) == y[:, None])
    with open(folder / "train.csv", "w") as fh:
        fh.write(",".join(FEATURES + ["cands"]) + "\n")
        for row, s in zip(X, S):
            fh.write(",".join(f"{v:.6f}" for v in row) + "," + ";".join(NAMES[s]) + "\n")
    subprocess.run([sys.executable, "-m", "plcore", "dataset=file", "dataset.name_or_path=train.csv",
                    "dataset.candidate_column=cands", "protocol.n_splits=2", "progress=false"], cwd=folder,
                   check=True, capture_output=True, text=True)
    client = mlflow.tracking.MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("plcore").experiment_id])
    return run.info.run_id


def _write_rows(path: Path, n: int, block: int = 200_000) -> None:
    """A CSV file of ``n`` new rows (an id column, then the features), written in blocks."""
    rng = np.random.default_rng(n)
    with open(path, "w") as fh:
        fh.write(",".join(["id"] + FEATURES) + "\n")
        for start in range(0, n, block):
            X = rng.normal(size=(min(block, n - start), len(FEATURES))) * 1.5 + 1.5
            ids = np.char.add("r", np.arange(start, start + X.shape[0]).astype(str))
            body = np.column_stack([ids, np.char.mod("%.6f", X)])
            fh.write("\n".join(",".join(r) for r in body) + "\n")


def _predict(folder: Path, run_id: str, data: Path, out: Path, cells) -> tuple[float, float]:
    """``(peak MB, seconds)`` of one ``predict`` in a fresh process (its own peak resident memory)."""
    hwm = folder / "peak.txt"
    args = [sys.executable, "-c", _CHILD.format(cells=cells, hwm=str(hwm)), f"run={run_id}", f"data={data}",
            f"out={out}", "id_column=id", f"tracking_uri=sqlite:///{folder / 'mlflow.db'}", "overwrite=true"]
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"predict failed on {data.name}: {proc.stderr.strip()[-500:]}")
    return int(hwm.read_text()) / 1024, seconds  # VmHWM is in kB


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000, 3_000_000])
    parser.add_argument("--whole-up-to", type=int, default=3_000_000,
                        help="run the whole-file path on files of at most this many rows")
    opts = parser.parse_args(argv)
    from plcore.run.predict import CHUNK_CELLS

    with tempfile.TemporaryDirectory(prefix="plcore-predict-memory-") as tmp:
        folder = Path(tmp)
        run_id = _train(folder)
        print(f"model: PL-KNN on 300 rows of {len(FEATURES)} features; pieces of {CHUNK_CELLS:,} cells "
              f"({CHUNK_CELLS // (len(FEATURES) + 1):,} rows of this file)")
        _write_rows(folder / "ten.csv", 10)
        floor, _ = _predict(folder, run_id, folder / "ten.csv", folder / "ten_out.csv", CHUNK_CELLS)
        print(f"predict on a file of 10 rows: peak {floor:.0f} MB (the interpreter, its imports, MLflow, the model)")
        print("| rows | file MB | pieces: peak MB | peak / file | s | whole file: peak MB | peak / file | s | "
              "whole / pieces |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in opts.rows:
            data = folder / f"new-{n}.csv"
            _write_rows(data, n)
            mb = data.stat().st_size / 2**20
            peak, secs = _predict(folder, run_id, data, folder / "pieces.csv", CHUNK_CELLS)
            row = f"| {n:,} | {mb:.1f} | {peak:.0f} | {peak / mb:.2f} | {secs:.1f} |"
            if n <= opts.whole_up_to:
                whole, wsecs = _predict(folder, run_id, data, folder / "whole.csv", None)
                same = (folder / "pieces.csv").read_bytes() == (folder / "whole.csv").read_bytes()
                row += f" {whole:.0f} | {whole / mb:.2f} | {wsecs:.1f} | {whole / peak:.1f}{'' if same else ' (outputs DIFFER)'} |"
            else:
                row += " - | - | - | - |"
            print(row, flush=True)
            data.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
