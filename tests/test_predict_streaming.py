"""``predict`` checks its output before any work and streams (issue 71, items 4 and 5), as a user
types it: ``out=`` in a missing folder, a folder, an existing file (the default name too) is one
line and exit 2 before the tracking store is opened or the model loaded; a file read in many
pieces gives, byte for byte, the output of the whole file read at once (ids, sets, abstentions)."""

import io
import os

import numpy as np
import pandas as pd
import pytest

NAMES = np.array(["cat", "dog", "fox", "owl"])
NO_RUN = "0123456789abcdef0123456789abcdef"  # a run id no store holds


def _table(n=90, seed=0):
    """Four numeric features, a nominal one, candidate sets ``cands`` and the truth ``truth``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, size=n)
    table = pd.DataFrame(rng.normal(size=(n, 4)) + 1.5 * y[:, None], columns=["f1", "f2", "f3", "f4"])
    table["habitat"] = np.where(y >= 2, "wild", "home")
    S = (rng.random((n, 4)) < 0.3) | (np.arange(4) == y[:, None])
    table["cands"] = [";".join(NAMES[row]) for row in S]
    table["truth"] = NAMES[y]
    return table


@pytest.fixture(scope="module")
def store(tmp_path_factory, plcore_cli):
    """Two runs on ``train.csv`` (nominal ``habitat`` one-hot): conformal sets and DST-PLL (reject option)."""
    import mlflow

    cwd = tmp_path_factory.mktemp("stream")
    _table().to_csv(cwd / "train.csv", index=False)
    base = ["dataset=file", "dataset.name_or_path=train.csv", "dataset.candidate_column=cands",
            "dataset.label_column=truth", "dataset.categorical=onehot", "protocol.n_splits=2", "progress=false",
            "seed=0"]
    plcore_cli([*base, "+learner=conformal_sets", "learner.estimator=plknn", "learner.alpha=0.2"], cwd)
    plcore_cli([*base, "+learner=dstpll"], cwd)
    client = mlflow.tracking.MlflowClient(f"sqlite:///{cwd / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("plcore").experiment_id])
    ids = {r.info.run_name.split(" · ")[0]: r.info.run_id for r in runs}
    new = _table(n=61, seed=1)[["habitat", "f4", "truth", "f2", "f1", "f3"]]
    new.insert(2, "id", [f"r{i:03d}" for i in range(len(new))])
    new.to_csv(cwd / "new.csv", index=False)
    new.to_parquet(cwd / "new.parquet", row_group_size=20)
    return cwd, ids


def _one_line(proc, code=2):
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code and len(lines) == 1, proc.stderr
    return lines[0]


def test_out_in_a_missing_folder_is_one_line_before_the_store_is_opened(plcore_cli, tmp_path):
    """Failed on main: a traceback after the model was loaded and the rows predicted. Here no store
    exists at all: the line is about ``out=``, so nothing was opened before it."""
    (tmp_path / "new.csv").write_text("f1\n1\n")
    proc = plcore_cli(["predict", f"run={NO_RUN}", "data=new.csv", "out=nowhere/p.csv"], tmp_path, check=False)
    assert _one_line(proc) == "error: out=nowhere/p.csv: its folder nowhere does not exist"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.csv"]


def test_out_a_folder_is_one_line_before_the_store_is_opened(plcore_cli, tmp_path):
    (tmp_path / "new.csv").write_text("f1\n1\n")
    (tmp_path / "results").mkdir()
    proc = plcore_cli(["predict", f"run={NO_RUN}", "data=new.csv", "out=results"], tmp_path, check=False)
    assert _one_line(proc) == "error: out=results: is a folder; name a file to write"
    assert not list((tmp_path / "results").iterdir())


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_out_in_a_read_only_folder_is_one_line_before_the_store_is_opened(plcore_cli, tmp_path):
    (tmp_path / "new.csv").write_text("f1\n1\n")
    (tmp_path / "locked").mkdir(mode=0o555)
    try:
        proc = plcore_cli(["predict", f"run={NO_RUN}", "data=new.csv", "out=locked/p.csv"], tmp_path, check=False)
        assert _one_line(proc) == "error: out=locked/p.csv: its folder locked is not writable"
    finally:
        (tmp_path / "locked").chmod(0o755)


def test_the_default_output_name_is_checked_before_the_store_is_opened(plcore_cli, tmp_path):
    """No ``out=``: ``predictions-<run id prefix>-<data>.csv`` in the current folder, an existing one kept."""
    (tmp_path / "new.csv").write_text("f1\n1\n")
    kept = tmp_path / f"predictions-{NO_RUN[:8]}-new.csv"
    kept.write_text("my notes\n")
    proc = plcore_cli(["predict", f"run={NO_RUN}", "data=new.csv"], tmp_path, check=False)
    assert _one_line(proc) == f"error: out={kept.name}: exists: not overwritten (overwrite replaces it)"
    assert kept.read_text() == "my notes\n"


def test_out_the_tracking_database_is_refused_even_with_overwrite(plcore_cli, store):
    cwd, ids = store
    before = (cwd / "mlflow.db").stat()
    proc = plcore_cli(["predict", f"run={ids['dstpll']}", "data=new.csv", "out=mlflow.db", "overwrite=true"], cwd,
                      check=False)
    assert _one_line(proc).startswith("error: out=mlflow.db: is the input ")
    assert (cwd / "mlflow.db").stat().st_mtime_ns == before.st_mtime_ns


def test_a_run_given_by_name_checks_the_default_name_before_its_model_is_loaded(plcore_cli, store):
    cwd, ids = store
    kept = cwd / f"predictions-{ids['dstpll'][:8]}-new.csv"
    kept.write_text("my notes\n")
    try:
        proc = plcore_cli(["predict", "run=dstpll · train · kfold", "data=new.csv"], cwd, check=False)
        assert _one_line(proc) == f"error: out={kept.name}: exists: not overwritten (overwrite replaces it)"
        assert kept.read_text() == "my notes\n"
    finally:
        kept.unlink()


def test_a_bad_row_after_the_first_pieces_leaves_no_file(store, monkeypatch):
    """Rows written as they are predicted: a bad row in a later piece is one line naming its file
    line, and neither the output nor its temporary file is left."""
    from plcore.exceptions import DataValidationError
    from plcore.run import predict

    cwd, ids = store
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(predict, "CHUNK_CELLS", 16)  # 2 rows at a time
    text = (cwd / "new.csv").read_text().splitlines()
    text[50] = "sea," + text[50].split(",", 1)[1]
    (cwd / "late.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(DataValidationError, match="^late.csv: unknown category 'sea' in nominal feature column "
                                                  "'habitat' at line 51;"):
        predict.main([f"run={ids['dstpll']}", "data=late.csv", "out=late_out.csv"])
    assert not list(cwd.glob("*late_out*"))


@pytest.mark.parametrize("data", ["new.csv", "new.parquet"])
@pytest.mark.parametrize("learner,flag", [("conformal_sets", "sets=true"), ("dstpll", "abstain=true")])
def test_many_pieces_give_the_whole_files_output_byte_for_byte(store, monkeypatch, data, learner, flag):
    """The encoding of every piece is the whole file's (nominal columns, column order, ids): the
    output of 1, 3 and 61 rows at a time is the output of the file read at once."""
    from plcore.datasets import read_tables
    from plcore.run import predict

    cwd, ids = store
    monkeypatch.chdir(cwd)
    outputs = {}
    for cells in (None, 8, 24, 10**6):
        monkeypatch.setattr(predict, "CHUNK_CELLS", cells)
        out = f"out-{learner}-{cells}-{data.replace('.', '-')}.csv"
        predict.main([f"run={ids[learner]}", f"data={data}", f"out={out}", "id_column=id", flag])
        outputs[cells] = (cwd / out).read_bytes()
    assert len(list(read_tables(cwd / data, cells=8))) == 61  # one row at a time: 7 columns
    assert len(list(read_tables(cwd / data, cells=24))) >= 21  # 3 rows at a time
    assert outputs[8] == outputs[24] == outputs[10**6] == outputs[None]
    lines = outputs[None].decode().splitlines()
    assert len(lines) == 62 and lines[0].startswith("id,label,") and lines[1].startswith("r000,")
    assert lines[0].endswith("prediction_set" if learner == "conformal_sets" else "reject_score")


def test_the_index_counts_on_across_pieces(store, monkeypatch):
    from plcore.run import predict

    cwd, ids = store
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(predict, "CHUNK_CELLS", 16)
    predict.main([f"run={ids['dstpll']}", "data=new.csv", "out=indexed.csv"])
    rows = (cwd / "indexed.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["index", *map(str, range(61))]


def test_a_progress_bar_on_a_terminal_only(monkeypatch):
    from plcore.run import predict

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, shown in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr("sys.stderr", stream)
        with predict._progress() as bar:
            bar.update(1500)
            bar.refresh()  # as tqdm does every 0.1 s
        assert ("1500 rows" in stream.getvalue()) is shown, stream.getvalue()
