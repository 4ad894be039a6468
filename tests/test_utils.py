"""plcore.utils: each shared kernel against a literal formula on a small example."""

import numpy as np
import osqp
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from plcore.utils import (dense_candidates, flip_signs, normalise_rows, osqp_settings, osqp_solution,
                          uniform_confidences, upper_block_pattern, vote_confidences)

S = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 1]], dtype=bool)


@pytest.mark.parametrize("form", [S, S.astype(int), sp.csr_matrix(S.astype(float))])
def test_dense_candidates_any_form(form):
    out = dense_candidates(form)
    assert out.dtype == bool and isinstance(out, np.ndarray) and np.array_equal(out, S)


def test_uniform_confidences_literal():
    expected = np.array([[0.5, 0, 0.5], [0, 1, 0], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(uniform_confidences(S), expected)
    np.testing.assert_allclose(uniform_confidences(sp.csr_matrix(S)), expected)


def test_vote_confidences_restricts_normalises_and_falls_back():
    votes = np.array([[3.0, 5.0, 1.0],    # off-candidate vote (5) ignored -> 3:1
                      [2.0, 0.0, 7.0],    # no vote on its only candidate -> uniform over it
                      [0.0, 0.0, 0.0]])   # no vote at all -> uniform over the candidates
    expected = np.array([[0.75, 0, 0.25], [0, 1, 0], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(vote_confidences(votes, S), expected)


def test_normalise_rows_unit_length_and_zero_rows():
    X = np.array([[3.0, 4.0], [0.0, 0.0], [-1.0, 0.0]])
    np.testing.assert_allclose(normalise_rows(X), [[0.6, 0.8], [0, 0], [-1, 0]])


def test_flip_signs_makes_largest_entry_positive():
    P = np.array([[0.1, -3.0, 0.0], [-2.0, 1.0, 0.0]])
    out = flip_signs(P)
    np.testing.assert_allclose(out, [[-0.1, 3.0, 0.0], [2.0, -1.0, 0.0]])
    assert flip_signs(np.zeros((0, 0))).shape == (0, 0)


def test_upper_block_pattern_equals_scipy_triu_of_block_diagonal():
    rng = np.random.RandomState(0)
    blocks = rng.randn(3, 4, 4)
    blocks = blocks + blocks.transpose(0, 2, 1)
    indptr, indices, r, c = upper_block_pattern(3, 4)
    P = sp.csc_matrix((blocks[:, r, c].ravel(), indices, indptr), shape=(12, 12))
    expected = sp.triu(sp.block_diag(list(blocks)), format="csc")
    np.testing.assert_allclose(P.toarray(), expected.toarray())


def test_osqp_settings_one_spelling_with_overrides():
    s = osqp_settings(1e-6, max_iter=100)
    assert s == {"eps_abs": 1e-6, "eps_rel": 1e-6, "polishing": True, "polish_refine_iter": 10,
                 "max_iter": 100, "verbose": False}
    assert osqp_settings(1e-7, max_iter=5, overrides={"eps_abs": 1e-3})["eps_abs"] == 1e-3


def _solve(max_iter):
    # min 0.5 x'x - 1'x  s.t. 0 <= x <= 0.5  -> x = 0.5
    solver = osqp.OSQP()
    solver.setup(sp.identity(2, format="csc"), -np.ones(2), sp.identity(2, format="csc"), np.zeros(2),
                 np.full(2, 0.5), **osqp_settings(1e-9, max_iter=max_iter, overrides={"polishing": False}))
    return solver.solve(raise_error=False)


def test_osqp_solution_accepts_warns_or_raises_by_status():
    np.testing.assert_allclose(osqp_solution(_solve(10_000), "toy"), [0.5, 0.5], atol=1e-6)
    res = _solve(1)
    with pytest.raises(RuntimeError, match="OSQP failed on the toy QP: status 'maximum iterations reached'"):
        osqp_solution(res, "toy")
    with pytest.warns(ConvergenceWarning, match="toy QP"):
        osqp_solution(res, "toy", accept=("solved", "maximum iterations reached"))


def test_atomic_write_leaves_all_of_the_file_or_none_of_it(tmp_path):
    """A block that fails leaves the old file and no temporary one; one that ends renames it into place."""
    from plcore.utils.files import atomic_write

    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_write(path) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed half-way")
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    with atomic_write(path) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".out.txt.")
        tmp.write_text("new")
        assert path.read_text() == "old"  # nothing replaced before the block ends
    assert path.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_one_line_collapses_line_breaks_and_names_an_exceptions_type():
    from plcore.exceptions import one_line

    assert one_line(ValueError("bad\n  value\tthere")) == "ValueError: bad value there"
    assert one_line("  two\nlines ") == "two lines"


def test_checked_output_refuses_each_bad_output_before_any_work(tmp_path, monkeypatch):
    import os

    from plcore.exceptions import ConfigError
    from plcore.utils.files import checked_output

    data = tmp_path / "data.csv"
    data.write_text("x\n1\n")
    tree = tmp_path / "results"
    (tree / "p").mkdir(parents=True)
    assert checked_output(tmp_path / "new.csv") == tmp_path / "new.csv"
    cases = {
        "is a folder": dict(path=tmp_path),
        "is the input": dict(path=data, inputs=[data], overwrite=True),
        "whose files this command must not replace": dict(path=tree / "p" / "fold-0.json", trees=[tree]),
        "exists: not overwritten": dict(path=data),
        "does not exist": dict(path=tmp_path / "missing" / "x.csv"),
        "is not a folder": dict(path=data / "x.csv"),
    }
    for said, kwargs in cases.items():
        with pytest.raises(ConfigError, match=said) as err:
            checked_output(**kwargs)
        assert "\n" not in str(err.value)
    link = tmp_path / "link.csv"
    link.symlink_to(data)
    with pytest.raises(ConfigError, match="is the input"):
        checked_output(link, inputs=[data], overwrite=True)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if not os.access(locked, os.W_OK):  # root writes anywhere
            with pytest.raises(ConfigError, match="is not writable"):
                checked_output(locked / "x.csv", flag="out=")
    finally:
        locked.chmod(0o700)
