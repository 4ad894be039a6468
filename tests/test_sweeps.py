"""Sweeps that always finish and can resume: a failed job is one line and the others run, the
sweep's table names every failed job (also one that failed before its run existed) and the exit
code says so; every sweep gets its own folder; ``resume=true`` reuses FINISHED runs of the same
settings and data."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from childenv import child_env

from plcore.run.report import sweep_table
from plcore.run.runs import JOB_RECORD, JobRecord, RunRecord, read_job_records, write_job_record

CHEAP = ["dataset=iris", "bags.r=1", "protocol.n_splits=2", "protocol.refit=false", "progress=false"]
FAULTY = ["+learner=plknn", "learner._target_=faulty.SlowKnn"]


def _plcore(args, cwd, **env):
    return subprocess.run([sys.executable, "-m", "plcore", *args], cwd=cwd, env=child_env(**env), capture_output=True,
                          text=True, timeout=300)


def _sweep_dir(stdout: str) -> str:
    return re.search(r"^sweep (\S+): ", stdout, re.M).group(1)


def test_a_failed_job_is_one_line_the_others_run_and_the_table_names_every_failure(tmp_path):
    """One job fails inside fit, two fail before their run exists (their data set is missing):
    every job runs, the sweep ends with its table naming all three, and the exit code is 1."""
    home = tmp_path / "home"
    home.mkdir()
    proc = _plcore(["-m", *FAULTY, "+learner.fail=true,false", "dataset=iris,lost", "bags.r=1",
                    "protocol.n_splits=2", "protocol.refit=false", "progress=false"], tmp_path,
                   PLCORE_DATA_HOME=str(home))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 3, proc.stderr  # one line per failed job
    assert sum("deliberate failure inside fit" in e for e in errors) == 1
    assert sum("data set 'lost' not found" in e for e in errors) == 2
    out = proc.stdout
    assert "4 job(s): 1 ran, 3 failed" in out, out
    table = out[out.index("\nsweep "):]
    assert table.count("(no run)") == 2 and table.count("FAILED") >= 3 and "FINISHED  accuracy_mean=" in table
    failed = [line for line in out.splitlines() if line.startswith("job ")]
    assert [line.split(" ", 3)[:3] for line in failed] == [["job", "0", "FAILED"], ["job", "1", "FAILED"],
                                                            ["job", "3", "FAILED"]], failed
    assert "(before its run existed)" in failed[1] and "dataset=lost" in failed[1]
    assert "(run " in failed[0] and "RuntimeError: deliberate failure inside fit" in failed[0]
    records = read_job_records(tmp_path / _sweep_dir(out))
    assert [r.status for r in records] == ["FAILED", "FAILED", "FINISHED", "FAILED"]
    assert records[1].run_id is None and records[0].run_id and records[2].run_id


def test_every_sweep_gets_its_own_folder_also_when_two_start_in_the_same_second(tmp_path):
    """The folder (and the ``hydra.sweep.dir`` tag) ends with the launching process's id, so two
    sweeps started together never share job folders or each other's runs in their tables."""
    args = ["-m", "learner.k=3,5", *CHEAP]
    procs = [subprocess.Popen([sys.executable, "-m", "plcore", *args], cwd=tmp_path, env=child_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [(p, *p.communicate(timeout=300)) for p in procs]
    dirs = []
    for proc, out, err in outs:
        assert proc.returncode == 0, err
        sweep = _sweep_dir(out)
        assert sweep.endswith(f"-{proc.pid}"), sweep
        assert "2 job(s): 2 ran" in out and out.count("plknn · iris · kfold") == 2, out
        dirs.append(sweep)
    assert dirs[0] != dirs[1]
    for sweep in dirs:
        assert [r.status for r in read_job_records(tmp_path / sweep)] == ["FINISHED", "FINISHED"]


def test_resume_reuses_finished_runs_of_the_same_settings_and_data(tmp_path):
    """``resume=true`` runs only the jobs that have no FINISHED run with the same resolved settings
    and data: the table says how many were reused; a changed seed (other candidate sets) runs."""
    first = _plcore(["-m", "learner.k=3,5", *CHEAP], tmp_path)
    assert first.returncode == 0, first.stderr
    again = _plcore(["-m", "learner.k=3,5,7", *CHEAP, "resume=true"], tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("resume: reused run ") == 2, again.stdout
    assert "3 job(s): 1 ran, 2 reused (resume=true)" in again.stdout, again.stdout
    records = read_job_records(tmp_path / _sweep_dir(again.stdout))
    assert [r.status for r in records] == ["REUSED", "REUSED", "FINISHED"]
    first_ids = {r.run_id for r in read_job_records(tmp_path / _sweep_dir(first.stdout))}
    assert {records[0].run_id, records[1].run_id} == first_ids
    table = again.stdout[again.stdout.index("\nsweep "):]
    assert table.count("REUSED") == 2 and table.count("accuracy_mean=") == 3, table
    other = _plcore(["-m", "learner.k=3", *CHEAP, "resume=true", "seed=1"], tmp_path)
    assert other.returncode == 0 and "resume: reused" not in other.stdout and "1 job(s): 1 ran" in other.stdout


def test_resume_needs_tracking(tmp_path):
    proc = _plcore(["learner.k=3", *CHEAP, "resume=true", "tracking=none"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: resume=true reuses the FINISHED runs of the tracking store: "
                                                "it needs tracking (leave out tracking=none)"]


def test_job_records_are_written_whole_and_a_job_without_one_is_missing(tmp_path):
    write_job_record(tmp_path / "0", JobRecord(0, ["learner.k=3"], "FINISHED", "abc"))
    assert not list((tmp_path / "0").glob(".*tmp"))  # written through a temporary file, then renamed
    assert json.loads((tmp_path / "0" / JOB_RECORD).read_text())["run_id"] == "abc"
    hydra_dir = tmp_path / "1" / ".hydra"  # Hydra wrote the job's folder; its process died before a record
    hydra_dir.mkdir(parents=True)
    (hydra_dir / "overrides.yaml").write_text("- learner.k=5\n")
    (hydra_dir / "hydra.yaml").write_text("hydra:\n  job:\n    num: 1\n")
    records = read_job_records(tmp_path)
    assert [(r.num, r.status, r.overrides) for r in records] == [(0, "FINISHED", ["learner.k=3"]),
                                                                 (1, "MISSING", ["learner.k=5"])]
    assert records[1].failed and not records[0].failed


@pytest.mark.parametrize("status", ["REUSED", "FINISHED"])
def test_sweep_table_lists_jobs_in_order_with_reused_runs_and_jobs_without_a_run(status):
    run = RunRecord("r1", "plknn · iris · kfold", {}, {"accuracy_mean": 0.5}, {"overrides": "learner.k=3"})
    stray = RunRecord("r2", "plknn · wine · kfold", {}, {}, {"overrides": "dataset=wine"}, status="KILLED")
    jobs = [JobRecord(0, ["dataset=lost"], "FAILED", None, "data set 'lost' not found"),
            JobRecord(1, ["learner.k=3"], status, "r1")]
    lines = sweep_table([run, stray], jobs).splitlines()
    assert lines[1].split() == ["(no", "run)", "dataset=lost", "FAILED", "-"]
    assert lines[2].split()[-3:] == ["learner.k=3", status, "accuracy_mean=0.5000"]
    assert lines[3].split()[-3:] == ["dataset=wine", "KILLED", "-"]


def test_the_comparison_names_every_failed_run_and_job(tmp_path):
    """``report=comparison`` on a sweep with a job failing in fit and two failing before their run:
    the page (and ``report --kind comparison`` later) lists all three under "Not compared"."""
    home = tmp_path / "home"
    home.mkdir()
    args = ["-m", *FAULTY, "+learner.fail=true,false", "dataset=iris,wine,lost", "bags.r=1", "protocol.n_splits=2",
            "protocol.refit=false", "progress=false", "report=comparison"]
    proc = _plcore(args, tmp_path, PLCORE_DATA_HOME=str(home))
    assert proc.returncode == 1, proc.stderr
    sweep = _sweep_dir(proc.stdout)
    for page in (tmp_path / sweep / "comparison.md", None):
        if page is None:  # rebuilt from the store and the sweep's folder
            again = _plcore(["report", "--kind", "comparison", "--sweep-dir", sweep, "--out", "again.md", "--no-log"],
                            tmp_path)
            assert again.returncode == 0, again.stderr
            page = tmp_path / "again.md"
        text = page.read_text()
        listed = text[text.index("## Not compared"):].splitlines()
        items = [line for line in listed if line.startswith("- ")]
        assert len(items) == 4, text  # iris and wine failed in fit; lost twice before its run
        assert sum("FAILED (run " in i and "deliberate failure inside fit" in i for i in items) == 2
        assert sum("before its run existed: data set 'lost' not found" in i for i in items) == 2
    assert "## Not compared" in proc.stdout  # the console text too


def test_the_run_key_leaves_out_how_a_run_is_carried_out():
    """A run's key (what ``resume=true`` matches) ignores the worker and thread counts, at any
    depth, and follows every setting that changes what is computed."""
    from omegaconf import OmegaConf

    from plcore.run.resolve import ResolvedRun

    class Data:
        def fingerprint(self):
            return "digits"

    def key(seed=0, **learner):
        cfg = OmegaConf.create({"learner": {"k": 3, **learner}, "seed": seed, "protocol": {"n_jobs": 1}})
        return ResolvedRun(cfg, None, None, Data(), {}).key()

    assert key() == key(n_threads=2) == key(n_threads="auto") == key(n_jobs=-1)
    assert len({key(), key(k=5), key(seed=1)}) == 3
