"""The committed results of the headline protocol pass ``verify --sample`` (issue 63, item 3):
every one of field/2's 3,699 files checked and its scores recomputed, then one fold a row, drawn
with seed 0 and the row's key, re-run here and compared with the stored predictions (about 3
minutes on one core)."""

from pathlib import Path

import pytest

COMMITTED = Path(__file__).resolve().parents[1] / "leaderboard"


@pytest.mark.data
@pytest.mark.slow
def test_the_committed_headline_results_pass_verify_sample(plcore_cli, data_home, tmp_path):
    proc = plcore_cli(["leaderboard", "verify", "--protocol", "field/2", "--results", str(COMMITTED), "--sample", "1",
                       "--seed", "0"], tmp_path, env_extra={"PLCORE_DATA_HOME": str(data_home)}, check=False, timeout=900)
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "3699 run file(s): each passes its checks, every stored score agrees with its predictions"
    assert proc.returncode == 0 and lines[-1].endswith("0 differ, 0 row(s) not re-run, 0 invalid file(s)"), \
        "\n".join(line for line in lines if "the same predictions" not in line)
    rerun = [line for line in lines if " fold " in line]
    assert len(rerun) == 60 and len({line.split(" on ")[1].split(":")[0] for line in rerun}) > 10  # spread out
