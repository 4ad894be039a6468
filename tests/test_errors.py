"""Bad input on the command line: one line on stderr naming the file, row or parameter, exit 2,
and nothing in MLflow (issue 16 item 4; DESIGN.md section 2 "Bad input").

Each case runs ``python -m plcore ... tracking=mlflow`` in a scratch directory on a tiny file
written there; data and parameters are checked before the MLflow run is created, so no
``mlflow.db`` (nor ``mlruns``) may exist afterwards.
"""

import warnings

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from plcore.learners import PlKnnLearner
from plcore.registry import get_registry

N, Q, D = 12, 3, 2
CLI = ["protocol.n_splits=2", "tracking=mlflow"]


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(N) % Q
    S = rng.random((N, Q)) < 0.4
    S[np.arange(N), y] = True
    T = np.zeros((N, Q))
    T[np.arange(N), y] = 1
    return rng.normal(size=(N, D)), S, y, T


def _palm(path, **override):
    X, S, _, T = _arrays()
    mat = {"data": X, "partial_target": sp.csc_matrix(S.T.astype(float)), "target": sp.csc_matrix(T.T)}
    mat.update(override)
    scipy.io.savemat(path, {k: v for k, v in mat.items() if v is not None})
    return path


def _csv(path, rows, header="f1,f2,label"):
    path.write_text(header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


# --- one builder per bad-input class: (tmp_path) -> (command-line arguments, env, needles in the error line)


def _file(path):
    return ["dataset=file", f"dataset.name_or_path={path}"]


def missing_path(tmp):
    p = tmp / "absent.mat"
    return _file(p), {}, [str(p), "does not exist"]


def missing_named(tmp):
    home = tmp / "home"
    (home / "palm").mkdir(parents=True)
    _palm(home / "palm" / "other.mat")
    return ["dataset=lost"], {"PLCORE_DATA_HOME": str(home)}, ["'lost' not found", "lost.mat", str(home),
                                                              "palm/other.mat"]


def unknown_name(tmp):
    home = tmp / "home"
    (home / "palm").mkdir(parents=True)
    _palm(home / "palm" / "mine.mat")
    return _file("lostt"), {"PLCORE_DATA_HOME": str(home)}, ["'lostt'", "not a known data set name",
                                                             f"the data home {home} holds palm/mine.mat"]


def csv_nan(tmp):
    X, _, y, _ = _arrays()
    rows = [[*x, c] for x, c in zip(X, y)]
    rows[1][0] = "nan"
    rows[3][1] = ""
    p = _csv(tmp / "nan.csv", rows)
    return _file(p), {}, [str(p), "rows [1, 3]", "columns ['f1', 'f2']", "NaN"]


def csv_one_class(tmp):
    X, *_ = _arrays()
    p = _csv(tmp / "one.csv", [[*x, "yes"] for x in X])
    return _file(p), {}, [str(p), "only one class", "'yes'", "at least 2 classes"]


def mat_missing_keys(tmp):
    X, S, *_ = _arrays()
    p = tmp / "keys.mat"
    scipy.io.savemat(p, {"features": X, "labels": S.T.astype(float)})
    return _file(p), {}, [str(p), "missing key(s) data, partial_target", "found: features, labels"]


def mat_row_mismatch(tmp):
    X, *_ = _arrays()
    p = _palm(tmp / "rows.mat", data=X[:-2])
    return _file(p), {}, [str(p), "'partial_target' has shape (3, 12) but 'data' has 10 rows"]


def npz_row_mismatch(tmp):
    X, S, y, _ = _arrays()
    p = tmp / "rows.npz"
    np.savez(p, X=X, S=S[:-1], y=y)
    return _file(p), {}, [str(p), "X has 12 rows but the candidate matrix has 11 rows"]


def mat_non_binary(tmp):
    _, S, _, T = _arrays()
    St = S.T.astype(float)
    St[1, 4] = 2
    p = _palm(tmp / "nonbin.mat", partial_target=St)
    return _file(p), {}, [str(p), "binary", "rows [4], columns [1]"]


def mat_truncated(tmp):
    good = _palm(tmp / "good.mat")
    p = tmp / "truncated.mat"
    p.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    return _file(p), {}, [str(p), "truncated or corrupt"]


def npz_empty_row(tmp):
    X, S, y, _ = _arrays()
    S[[3, 7]] = False
    p = tmp / "empty.npz"
    np.savez(p, X=X, S=S, y=y)
    return _file(p), {}, [str(p), "empty rows", "rows [3, 7]"]


def npz_pickle(tmp):
    X, _, y, _ = _arrays()
    p = tmp / "objects.npz"
    np.savez(p, X=X, y=np.array([str(v) for v in y], dtype=object))
    return _file(p), {}, [str(p), "'y'", "allow_pickle=False", "never unpickles"]


def arff_no_class(tmp):
    p = tmp / "nocls.arff"
    p.write_text("@relation r\n@attribute a numeric\n@attribute b numeric\n@data\n"
                 + "".join(f"{i},{i % 3}\n" for i in range(N)))
    return _file(p), {}, [str(p), "no class attribute", "'b' is numeric"]


def arff_unparsable(tmp):
    p = tmp / "bad.arff"
    p.write_text("@relation r\n@attribute a numeric\n@attribute class {x,y}\n@data\n1,x\n2,z\n3,y\n")
    return _file(p), {}, [str(p), "not a valid ARFF file", "data row 1 (file line 6)", "'z'"]


def param_learner_k(tmp):
    return ["+learner=plknn", "learner.k=0"], {}, ["'k' parameter of PlKnnLearner", "Got 0"]


def param_bags_r(tmp):
    return ["bags.r=-1"], {}, ["'r' parameter of UniformBags", "Got -1"]


CASES = [missing_path, missing_named, unknown_name, csv_nan, csv_one_class, mat_missing_keys, mat_row_mismatch,
         npz_row_mismatch, mat_non_binary, mat_truncated, npz_empty_row, npz_pickle, arff_no_class,
         arff_unparsable, param_learner_k, param_bags_r]


def assert_one_line_error(proc, cwd, needles):
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    assert not (cwd / "mlflow.db").exists() and not (cwd / "mlruns").exists(), "bad input left an MLflow run"


# --- checked by the app before tracking (plcore.run.resolve.resolve_run, ProtocolSpec.validate)


def no_truth(tmp):
    X, S, *_ = _arrays()
    p = tmp / "notruth.npz"
    np.savez(p, X=X, S=S)
    # kfold and holdout estimate such data label-free (tests/test_practitioner.py); clustering scores truth
    return _file(p) + ["+clusterer=kmeans", "protocol=clustering"], {}, [
        "notruth", "no true labels", "protocol 'clustering' evaluates against them", "dataset.label_column"]


def protocol_n_splits(tmp):
    return ["protocol.n_splits=1"], {}, ["n_splits"]


def bags_r_above_q(tmp):
    X, _, y, _ = _arrays()
    p = _csv(tmp / "three.csv", [[*x, c] for x, c in zip(X, y)])
    return _file(p) + ["bags.r=3"], {}, ["r", "q"]


def default_bags_give_every_label(tmp):
    """Issue 42: the default bags (r = 3) on a 4-class file put all 4 labels in every bag."""
    X = _arrays()[0]
    p = _csv(tmp / "four.csv", [[*x, "abcd"[i % 4]] for i, x in enumerate(X)])
    return _file(p), {}, ["UniformBags: r must be <= 2", "r >= q - 1 = 3 puts all 4 labels in every bag", "got 3"]


def flip_probability_one(tmp):
    return ["dataset=iris", "bags=flip", "bags.p=1"], {}, ["'p' parameter of FlipBags", "[0.0, 1.0)"]


def noisy_q_zero_with_eta(tmp):
    """Issue 43: bags=noisy with q=0 redraws every set that lost its true label: eta would do nothing."""
    return ["dataset=iris", "bags=noisy", "bags.q=0", "bags.eta=0.2"], {}, [
        "NoisyBags: q=0 with eta=0.2 leaves no true label out", "set q > 0 or eta=0"]


def noisy_eta_one(tmp):
    return ["dataset=iris", "bags=noisy", "bags.eta=1"], {}, ["'eta' parameter of NoisyBags", "[0.0, 1.0)"]


def _outside(tmp, suffix):
    X, S, y, T = _arrays()
    S[[2, 7], :] = False
    S[[2, 7], (y[[2, 7]] + 1) % Q] = True  # two rows whose true label is not a candidate
    p = tmp / f"outside{suffix}"
    if suffix == ".mat":
        scipy.io.savemat(p, {"data": X, "partial_target": sp.csc_matrix(S.T.astype(float)), "target": T.T})
    else:
        np.savez(p, X=X, S=S, y=y)
    return _file(p), {}, [str(p), "the true label is outside its candidate set in 2 of 12 rows (rows 2, 7)",
                          "dataset.noisy=true"]


def mat_true_label_outside(tmp):
    """Issue 42: such a file ran FINISHED without a word."""
    return _outside(tmp, ".mat")


def npz_true_label_outside(tmp):
    return _outside(tmp, ".npz")


def csv_candidate_column_missing(tmp):
    X, _, y, _ = _arrays()
    p = _csv(tmp / "sets.csv", [[*x, "abc"[c]] for x, c in zip(X, y)])
    return _file(p) + ["dataset.candidate_column=cands"], {}, [str(p), "candidate_column='cands': no such column"]


def own_sets_hold_every_label(tmp):
    X, _, y, _ = _arrays()
    p = _csv(tmp / "full.csv", [[*x, "a;b;c", "abc"[c]] for x, c in zip(X, y)], header="f1,f2,cands,truth")
    return _file(p) + ["dataset.candidate_column=cands", "dataset.label_column=truth"], {}, [
        "data set 'full' puts all 3 labels in every candidate set", "no information"]


def protocol_n_splits_above_n(tmp):
    return ["protocol.n_splits=5000"], {}, ["n_splits=5000", "rows"]


def protocol_shuffle(tmp):
    return ["protocol.shuffle=maybe"], {}, ["'shuffle' parameter of protocol kfold", "Got 'maybe'"]


def protocol_unknown_preprocessing(tmp):
    return ["protocol.preprocessing=zscore"], {}, ["unknown preprocessing 'zscore'", "standardize"]


def protocol_unknown_parameter(tmp):
    return ["+protocol.n_fold=3"], {}, ["protocol 'kfold' has no parameter(s) n_fold"]


def learner_metric_unknown(tmp):
    return ["+learner=plknn", "learner.metric=nosuchmetric"], {}, ["'metric' parameter of PlKnnLearner",
                                                                    "nosuchmetric"]


def clusterer_more_clusters_than_classes(tmp):
    return ["+clusterer=spectral", "clusterer.n_clusters=1000", "protocol=clustering"], {}, [
        "n_clusters=1000 exceeds the 10 class(es)"]


def reducer_more_features_than_the_data(tmp):
    return ["+reducer=saute", "reducer.n_features=50", "+learner=plknn", "dataset=iris"], {}, [
        "n_features=50 exceeds the 4 feature(s)"]


def protocol_parameter_of_another_protocol(tmp):
    return ["protocol=clustering", "+clusterer=kmeans", "protocol.n_repeats=3"], {}, [
        "protocol 'clustering' has no parameter 'n_repeats'"]


def unknown_top_level_setting(tmp):
    return ["sed=1"], {}, ["unknown setting 'sed'", "seed", "+sed=1"]


def unknown_dataset_setting(tmp):
    return ["dataset.foo=1"], {}, ["data set 'digits' has no setting 'foo'", "name_or_path"]


def a_file_named_as_a_data_set(tmp):
    return ["dataset=some/file.mat"], {}, ["unknown dataset 'some/file.mat'",
                                           "dataset=file dataset.name_or_path=some/file.mat"]


def plus_on_a_default_group(tmp):
    return ["+dataset=iris"], {}, ["dataset is in the defaults", "dataset=iris"]


LATE_CASES = [default_bags_give_every_label, flip_probability_one, noisy_q_zero_with_eta, noisy_eta_one, mat_true_label_outside, npz_true_label_outside,
              csv_candidate_column_missing, own_sets_hold_every_label, plus_on_a_default_group, unknown_top_level_setting, unknown_dataset_setting, a_file_named_as_a_data_set, no_truth, protocol_n_splits, bags_r_above_q, protocol_n_splits_above_n, protocol_shuffle,
              protocol_unknown_preprocessing, protocol_unknown_parameter, learner_metric_unknown,
              clusterer_more_clusters_than_classes, reducer_more_features_than_the_data,
              protocol_parameter_of_another_protocol]


def _bad_input_case(case, tmp):
    cwd = tmp / "cwd"
    cwd.mkdir()
    args, env, needles = case(tmp)
    base = CLI if "protocol=clustering" not in args else ["tracking=mlflow", "protocol.n_partitions=2"]
    return [*base, *args], cwd, env, needles


def test_bad_input_from_a_real_process_is_one_line_exit_2_and_no_run(tmp_path, plcore_cli):
    """The batch below runs ``plcore.run.app.main`` in one process; this case runs the interpreter."""
    args, cwd, env, needles = _bad_input_case(csv_nan, tmp_path)
    assert_one_line_error(plcore_cli(args, cwd, env_extra=env, check=False, timeout=120), cwd, needles)


@pytest.fixture(scope="session")
def bad_command_lines(tmp_path_factory, plcore_cli_batch):
    """Every case of this module, run in one process (``run_plcore_batch``): ``id -> (proc, cwd, needles)``;
    a component with no bounded parameter maps to None. Session-scoped: pytest-xdist may run other
    modules' tests between this module's, which would tear a module fixture down and run it again."""
    root = tmp_path_factory.mktemp("bad-command-lines")
    built = {}
    for case in CASES + LATE_CASES:
        (root / case.__name__).mkdir()
        built[case.__name__] = _bad_input_case(case, root / case.__name__)
    for kind, name in _component_cases():
        bad = _out_of_range(get_registry().get(kind, name))
        if bad is None:
            built[f"{kind}:{name}"] = None
            continue
        cwd = root / f"{kind}-{name}"
        cwd.mkdir()
        built[f"{kind}:{name}"] = (_out_of_range_args(kind, name, *bad), cwd, {}, [bad[0]])
    runnable = {key: value for key, value in built.items() if value is not None}
    procs = plcore_cli_batch([(args, cwd, env) for args, cwd, env, _ in runnable.values()], root, timeout=1800)
    results = dict.fromkeys(built)
    for (key, (_, cwd, _, needles)), proc in zip(runnable.items(), procs):
        results[key] = (proc, cwd, needles)
    return results


@pytest.mark.xdist_group("bad-command-lines")
@pytest.mark.parametrize("case", CASES + LATE_CASES, ids=lambda c: c.__name__)
def test_bad_input_is_one_line_exit_2_and_no_run(case, bad_command_lines):
    assert_one_line_error(*bad_command_lines[case.__name__])


# --- PL-KNN: k above the training-set size is capped (scikit-learn's checks fit tiny data) with a warning


def test_plknn_k_above_training_size_warns_once_naming_k_and_n():
    X, S, *_ = _arrays()
    with pytest.warns(UserWarning, match=r"k=50 is larger than the training set \(n=12\); using k=12") as rec:
        est = PlKnnLearner(k=50).fit(X, S)
    assert len([w for w in rec if "k=50" in str(w.message)]) == 1
    assert est.n_neighbors_ == 12 and est.predict(X).shape == (N,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PlKnnLearner(k=12).fit(X, S)  # k == n: no warning


# --- every registered component, from the command line, with an out-of-range setting


def _out_of_range(comp):
    """``(parameter, value)`` that the component's ``_parameter_constraints`` refuse (a value
    below an interval's left bound, or above its right one), else one of its ``_data_limits``
    far above the data, else a ``random_state`` that is no seed; None if it declares none."""
    from plcore.exceptions import InvalidParameterError
    from plcore.validation import Interval, validate_params

    cls = comp.spec.cls
    for key, constraints in sorted(getattr(cls, "_parameter_constraints", {}).items()):
        for c in constraints:
            if not isinstance(c, Interval):
                continue
            tries = [c.left - 1, c.left] if c.left is not None else []
            tries += [c.right + 1, c.right] if c.right is not None else []
            for value in tries:
                value = int(value) if c.type is not float and float(value).is_integer() else float(value)
                try:
                    validate_params(cls(**{key: value}))
                except InvalidParameterError:
                    return key, value
                except TypeError:  # e.g. a parameter another one constrains at construction
                    break
    for key in getattr(cls, "_data_limits", {}):
        return key, 10 ** 6
    if "random_state" in getattr(cls, "_parameter_constraints", {}):  # a generator with no other knob
        return "random_state", "not_a_seed"
    return None


def _component_cases():
    from plcore.registry import ESTIMATOR_KINDS

    reg = get_registry()
    return [(kind, name) for (kind, name) in sorted(reg.components) if kind in ESTIMATOR_KINDS]


def _out_of_range_args(kind, name, key, value):
    kfold = ["protocol.n_splits=2"]
    select = {"learner": [f"+learner={name}", *kfold], "reducer": [f"+reducer={name}", *kfold],
              "bags": [f"bags={name}", *kfold],
              "clusterer": [f"+clusterer={name}", "protocol=clustering", "protocol.n_partitions=2"]}[kind]
    return ["tracking=mlflow", "dataset=iris", *select, f"{kind}.{key}={value}"]


@pytest.mark.xdist_group("bad-command-lines")
@pytest.mark.parametrize("kind, name", _component_cases(), ids=lambda v: str(v))
def test_every_component_out_of_range_is_one_line_exit_2_and_no_run(kind, name, bad_command_lines):
    result = bad_command_lines[f"{kind}:{name}"]
    assert result is not None, f"{kind} {name} declares no bounded parameter to test"
    assert_one_line_error(*result)
