"""The shared training loop against a textbook loop, POP's schedule, early stopping, determinism."""

import math

import numpy as np
import pytest
import torch

from plcore.testing import make_pl_data
import plcore_deep
from plcore_deep.plugin import LEARNER_OPTIONS
from plcore_deep import CcLearner, PopLearner, ProdenLearner
from plcore_deep import _candidate_losses as candidate_losses
from plcore_deep import _confidence as confidence
from plcore_deep import _loop as loop
from plcore_deep import _networks as networks

#: option name -> class (the plugin's option table, plugin.py)
LEARNERS = {option: getattr(plcore_deep, path.split(":")[1]) for option, path in LEARNER_OPTIONS.items()}


def _initial_network(seed, d, q, hidden):
    """The network ``loop.train`` starts from for ``seed`` (its documented seeding)."""
    rng = np.random.RandomState(seed)
    rng.randint(2**31 - 1)                      # the batch-order generator's seed
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.randint(2**31 - 1)))
        return networks.build_network(d, q, hidden)


def _textbook(method, X, S, *, seed, hidden, epochs, lr, beta=2.0):
    """Full-batch plain SGD with each paper's loss and update written out literally."""
    net = _initial_network(seed, X.shape[1], S.shape[1], hidden)
    X = torch.tensor(X, dtype=torch.float32)
    S = torch.tensor(S, dtype=torch.float32)
    W = torch.full_like(S, 1 / S.shape[1]) if method == "lws" else S / S.sum(1, keepdim=True)
    opt = torch.optim.SGD(net.parameters(), lr=lr)

    def posterior(f, mask):
        p = torch.softmax(f, 1) * mask
        return p / p.sum(1, keepdim=True)

    for _ in range(epochs):
        f = net(X)
        p = torch.softmax(f, 1)
        if method == "cc":
            loss = -torch.log((p * S).sum(1)).mean()
        elif method == "lws":
            loss = ((S * W / (1 + torch.exp(f))).sum(1) + beta * ((1 - S) * W / (1 + torch.exp(-f))).sum(1)).mean()
        else:
            loss = -(W * torch.log(p)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            after = net(X)
            if method == "proden":
                W = posterior(f.detach(), S)                 # the outputs the step was computed on
            elif method == "rc":
                W = posterior(after, S)                      # a fresh pass after the step
            elif method == "lws":
                W = posterior(after, S) + posterior(after, 1 - S)
            elif method == "cavl":
                cav = torch.where(S > 0, after * (1 - after).abs(), torch.tensor(-math.inf))
                W = torch.nn.functional.one_hot(cav.argmax(1), S.shape[1]).float()
    return net, W


#: the methods the textbook loop writes out, each with the parameters it uses there
METHODS = {"proden": confidence.Proden, "rc": confidence.Rc, "cc": candidate_losses.Cc,
           "lws": lambda: candidate_losses.Lws(beta=2.0), "cavl": confidence.Cavl}


@pytest.mark.parametrize("method", ["proden", "rc", "cc", "lws", "cavl"])
def test_loop_equals_the_textbook_loop(method):
    X, S, _ = make_pl_data(n_samples=60, n_features=5, n_classes=4, r=2, random_state=3)
    X = (X - X.mean(0)) / X.std(0)
    kw = dict(seed=11, hidden=(8,), epochs=6, lr=0.5)
    ref_net, ref_W = _textbook(method, X, S, **kw)
    res = loop.train(X, S, METHODS[method](), loop.LoopConfig(
        hidden_layer_sizes=(8,), n_epochs=6, batch_size=1000, learning_rate=0.5, weight_decay=0.0, optimizer="sgd",
        momentum=0.0, early_stopping=False, validation_fraction=0.1, n_iter_no_change=1, tol=0.0, score=None,
        device=torch.device("cpu"), seed=11))
    for got, want in zip(res.model.parameters(), ref_net.parameters()):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().double().numpy(), atol=2e-5)
    if method != "cc":
        want = (ref_W * torch.tensor(S, dtype=torch.float32)).double().numpy()
        np.testing.assert_allclose(res.confidences, want / want.sum(1, keepdims=True), atol=2e-5)


def test_the_textbook_comparison_tells_the_update_timings_apart():
    """PRODEN (outputs before the step) and RC (after it) really differ here, so the test
    above would catch an update made at the wrong moment."""
    X, S, _ = make_pl_data(n_samples=60, n_features=5, n_classes=4, r=2, random_state=3)
    X = (X - X.mean(0)) / X.std(0)
    kw = dict(seed=11, hidden=(8,), epochs=6, lr=0.5)
    (_, w_before), (_, w_after) = _textbook("proden", X, S, **kw), _textbook("rc", X, S, **kw)
    assert float((w_before - w_after).abs().max()) > 1e-2


class _State:
    def __init__(self, W, S):
        self.W, self.S = torch.tensor(W), torch.tensor(S)
        self.train = torch.arange(len(W))
        self.epoch, self.n_purified = 0, 0


def test_pop_purifies_every_window_epochs_after_warm_up_from_the_window_mean():
    S = [[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]
    pop = confidence.Pop(warm_up=4, window=2, theta=0.3, inc=0.5, theta_max=0.4)
    state = _State([[0.7, 0.25, 0.05], [0.5, 0.5, 0.0]], S)
    history = [[[0.7, 0.25, 0.05], [0.5, 0.5, 0.0]], [[0.7, 0.15, 0.15], [0.5, 0.5, 0.0]]] * 3
    for epoch, W in enumerate(history[:5]):       # epochs 0..4
        state.epoch, state.W = epoch, torch.tensor(W)
        pop.end_epoch(state)
        if epoch < 4:
            assert state.S.tolist() == S, "purified before the warm-up ended"
    # epoch 4: mean of epochs 3 (0.7, .15, .15) and 4 (0.7, .25, .05) = (0.7, 0.2, 0.1); ratio 0.2/0.7 < 0.3
    assert state.S.tolist() == [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    np.testing.assert_allclose(state.W.numpy(), [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    assert state.n_purified == 2
    assert pop.theta == 0.3   # 2 of 6 entries changed: theta stays
    # a round that changes nothing raises theta by the factor 1 + inc, capped once >= theta_max
    state.epoch = 6
    state.W = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    pop.record[:] = state.W
    pop.end_epoch(state)
    assert pop.theta == pytest.approx(0.45)
    state.epoch = 8
    pop.end_epoch(state)
    assert pop.theta == pytest.approx(0.45)


def test_pop_learner_shrinks_candidate_sets_and_keeps_the_truth_mostly():
    X, S, y = make_pl_data(n_samples=200, n_features=5, n_classes=5, r=2, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    est = PopLearner(hidden_layer_sizes=(32,), n_epochs=60, warm_up=20, theta=0.2, learning_rate=1e-2,
                     device="cpu", random_state=0).fit(X, S)
    assert est.candidates_.sum() < S.sum()
    assert (est.candidates_ <= S).all(), "purification only removes labels"
    assert est.candidates_[np.arange(len(y)), y].mean() >= 0.95


@pytest.mark.parametrize("scoring", ["partial_log_likelihood", "approximated_accuracy", "covering_rate"])
def test_early_stopping_keeps_the_best_epoch_by_a_candidate_set_score(scoring):
    X, S, _ = make_pl_data(n_samples=200, n_features=5, n_classes=4, r=1, random_state=2)
    est = ProdenLearner(hidden_layer_sizes=(16,), n_epochs=300, early_stopping=True, n_iter_no_change=5,
                        learning_rate=1e-2, scoring=scoring, device="cpu", random_state=0).fit(X, S)
    scores = est.validation_scores_
    assert est.n_epochs_ == len(scores) < 300, "stopped early"
    best, best_epoch = -np.inf, None
    for epoch, value in enumerate(scores):      # the rule, written out: improve by more than tol
        if value > best + est.tol:
            best, best_epoch = value, epoch
    assert est.best_epoch_ == best_epoch
    assert est.n_epochs_ - 1 - est.best_epoch_ == 5
    # the kept weights are the best epoch's: re-scoring the held-out rows gives its score
    assert scores[est.best_epoch_] == max(scores[:est.best_epoch_ + 1])


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_deterministic_on_the_cpu_and_seed_dependent(name):
    X, S, _ = make_pl_data(n_samples=80, n_features=4, n_classes=3, r=1, random_state=0)
    kw = dict(hidden_layer_sizes=(8,), n_epochs=5, device="cpu")
    a = LEARNERS[name](random_state=7, **kw).fit(X, S)
    b = LEARNERS[name](random_state=7, **kw).fit(X, S)
    c = LEARNERS[name](random_state=8, **kw).fit(X, S)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    np.testing.assert_array_equal(a.confidences_, b.confidences_)
    assert not np.array_equal(a.decision_function(X), c.decision_function(X))


def test_device_cuda_without_cuda_is_a_one_line_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    X, S, _ = make_pl_data(n_samples=30)
    with pytest.raises(ValueError, match="PyTorch sees no CUDA device"):
        CcLearner(device="cuda").fit(X, S)


def test_importing_the_plugin_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys; from plcore.registry import get_registry; reg = get_registry(); "
            "assert ('learner', 'proden') in reg.components, reg.errors; "
            "reg.components[('learner', 'pop')].config(); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("bad", [(0,), (-3, 5), (2.5,), ("a",)])
def test_bad_hidden_layer_sizes_is_a_one_line_parameter_error(bad):
    from plcore.exceptions import InvalidParameterError

    X, S, _ = make_pl_data(n_samples=30)
    with pytest.raises(InvalidParameterError, match="hidden_layer_sizes must be a list of positive integer"):
        CcLearner(hidden_layer_sizes=bad, device="cpu").fit(X, S)


def test_linear_model_has_no_hidden_layer():
    X, S, _ = make_pl_data(n_samples=30)
    est = CcLearner(hidden_layer_sizes=(), n_epochs=2, device="cpu").fit(X, S)
    assert [type(m).__name__ for m in est.network_] == ["Linear"]


def test_parallel_folds_give_the_serial_results_with_torch_in_the_workers():
    """``protocol.n_jobs``: torch in loky workers (one thread each) gives the serial folds."""
    from threadpoolctl import threadpool_limits

    from plcore.data import PLDataset
    from plcore.run.protocols import Setup, kfold

    X, S, y = make_pl_data(n_samples=120, n_features=5, n_classes=4, r=1, random_state=0)
    ds = PLDataset(X, S, y, name="blobs")
    learner = CcLearner(hidden_layer_sizes=(8,), n_epochs=5, device="cpu", random_state=0)
    torch_threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with threadpool_limits(1):
            serial = kfold(Setup(learner=learner), ds, n_splits=3, refit=False, progress=False)
    finally:
        torch.set_num_threads(torch_threads)
    parallel = kfold(Setup(learner=learner), ds, n_splits=3, refit=False, progress=False, n_jobs=2)
    strip = [{k: v for k, v in s.items() if not k.endswith("_time")} for s in serial.steps]
    assert [{k: v for k, v in s.items() if not k.endswith("_time")} for s in parallel.steps] == strip
    assert parallel.predictions == serial.predictions


# ----------------------------------------------------------------------------- the field's recipe
def test_batch_norm_follows_each_hidden_relu():
    """Fuchs & Kalinke's tabular MLP: Linear -> ReLU -> BatchNorm1d per hidden layer."""
    net = networks.build_network(5, 3, (7, 6), batch_norm=True)
    kinds = [type(m).__name__ for m in net]
    assert kinds == ["Linear", "ReLU", "BatchNorm1d", "Linear", "ReLU", "BatchNorm1d", "Linear"]
    assert [m.num_features for m in net if isinstance(m, torch.nn.BatchNorm1d)] == [7, 6]
    assert [type(m).__name__ for m in networks.build_network(5, 3, (7,))] == ["Linear", "ReLU", "Linear"]


@pytest.mark.parametrize("n_train, expected", [(1, 16), (4999, 16), (5000, 256), (60000, 256)])
def test_auto_batch_size_is_the_recipes_rule(n_train, expected):
    assert loop.batch_size_for("auto", n_train) == expected
    assert loop.batch_size_for(100, n_train) == 100


def _record_learning_rates(monkeypatch) -> list:
    """The learning rate of every batch of the next fit (and the one after its last step), read off
    the optimiser each time the loop's schedule steps."""
    seen = []
    real = loop._schedule

    def spy(opt, name, lr, n_epochs, steps):
        sched = real(opt, name, lr, n_epochs, steps)
        step = sched.step

        def recorded():
            step()
            seen.append(opt.param_groups[0]["lr"])
        sched.step = recorded
        seen.append(opt.param_groups[0]["lr"])
        return sched

    monkeypatch.setattr(loop, "_schedule", spy)
    return seen


def test_one_cycle_is_stepped_once_per_batch_over_the_whole_run(monkeypatch):
    """33 rows in batches of 16 (the last of one row, skipped under batch norm): 3 steps per
    epoch, 60 in all; the schedule starts at lr / 25, peaks at lr and ends at lr / 25 / 1e4 (PyTorch's
    OneCycleLR defaults), and a step too many would raise."""
    seen = _record_learning_rates(monkeypatch)
    X, S, _ = make_pl_data(n_samples=33, n_classes=3, random_state=0)
    ProdenLearner(hidden_layer_sizes=(8,), batch_norm=True, lr_schedule="one_cycle", learning_rate=0.01,
                  batch_size=16, n_epochs=20, device="cpu", random_state=0).fit(X, S)
    assert len(seen) == 1 + 20 * 3
    used = seen[:60]  # the rates of the 60 batches (the step after the last batch is never used)
    assert used[0] == pytest.approx(0.01 / 25) and max(used) == pytest.approx(0.01)
    assert used[-1] == pytest.approx(0.01 / 25 / 1e4)
    assert int(np.argmax(used)) == 0.3 * 60 - 1  # PyTorch's 30% warm-up: the peak at batch 18 of 60


def test_the_published_recipe_learns_where_the_answer_is_known():
    X, S, y = make_pl_data(n_samples=300, n_classes=4, random_state=1)
    est = ProdenLearner(hidden_layer_sizes=(32, 32, 32), batch_norm=True, lr_schedule="one_cycle",
                        learning_rate=0.01, weight_decay=1e-4, batch_size="auto", n_epochs=20, device="cpu",
                        random_state=0).fit(X, S)
    assert (est.predict(X) == y).mean() > 0.9


def test_the_published_preset_takes_any_deep_learner_and_data_set(tmp_path):
    """``experiment=deep_published learner=cc dataset=iris``: CC with the preset's recipe on 5
    holdout splits of min-max features (a short run: 2 epochs, 1 split)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "plcore", "experiment=deep_published", "learner=cc", "dataset=iris",
                          "bags.r=1", "learner.n_epochs=2", "learner.device=cpu", "protocol.n_repeats=1",
                          "tracking=none"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "learner=CcLearner(batch_norm=True, batch_size='auto'" in out.stdout
    assert "protocol=holdout" in out.stdout and "accuracy_mean=" in out.stdout


# ----------------------------------------------------------------------------- LeNet for image rows
def test_lenet_is_lenet5_on_28x28_rows():
    net = networks.build_lenet(784, 10)
    kinds = [type(m).__name__ for m in net]
    assert kinds == ["Unflatten", "Conv2d", "ReLU", "MaxPool2d", "Conv2d", "ReLU", "MaxPool2d", "Flatten",
                     "Linear", "ReLU", "Linear", "ReLU", "Linear"]
    assert net[8].in_features == 16 * 5 * 5 and net[-1].out_features == 10
    assert net(torch.zeros((3, 784))).shape == (3, 10)
    assert sum(p.numel() for p in net.parameters()) == 61706  # LeNet-5's 61,706 weights (10 classes)


def test_lenet_learns_which_quadrant_is_bright():
    """16 x 16 one-channel images whose class is the bright quadrant, with candidate sets."""
    rng = np.random.RandomState(0)
    n, q = 240, 4
    y = rng.randint(0, q, n)
    imgs = rng.rand(n, 16, 16) * 0.3
    for i, c in enumerate(y):
        r, col = divmod(int(c), 2)
        imgs[i, 8 * r:8 * r + 8, 8 * col:8 * col + 8] += 0.7
    S = np.eye(q, dtype=bool)[y] | (rng.rand(n, q) < 0.3)
    est = ProdenLearner(network="lenet", n_epochs=15, batch_size=32, learning_rate=3e-3, device="cpu",
                        random_state=0).fit(imgs.reshape(n, -1), S)
    assert (est.predict(imgs.reshape(n, -1)) == y).mean() > 0.95


def test_lenet_on_rows_that_are_not_square_images_is_a_one_line_parameter_error():
    from plcore.exceptions import InvalidParameterError

    X, S, _ = make_pl_data(n_samples=30)
    with pytest.raises(InvalidParameterError, match=r"network='lenet' needs rows of square one-channel images .* d=4"):
        CcLearner(network="lenet", device="cpu").fit(X, S)


def test_cosine_decays_per_epoch_as_picos_adjust_learning_rate(monkeypatch):
    """32 rows in batches of 16: 2 steps per epoch, 10 epochs; every batch of epoch t trains at
    m + (lr - m) (1 + cos(pi t / 10)) / 2 with m = lr / 1000 (PiCO's schedule, set per epoch)."""
    import math

    seen = _record_learning_rates(monkeypatch)
    X, S, _ = make_pl_data(n_samples=32, n_classes=3, random_state=0)
    ProdenLearner(hidden_layer_sizes=(8,), optimizer="sgd", lr_schedule="cosine", learning_rate=0.01,
                  batch_size=16, n_epochs=10, device="cpu", random_state=0).fit(X, S)
    m = 0.01 / 1000
    expected = [m + (0.01 - m) * (1 + math.cos(math.pi * (b // 2) / 10)) / 2 for b in range(20)]
    assert seen[:20] == pytest.approx(expected)


def test_one_cycle_cycles_adams_beta1_and_leaves_sgds_momentum_alone():
    net = torch.nn.Linear(2, 2)
    sgd = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.3)
    loop._schedule(sgd, "one_cycle", 0.1, 2, 3)
    assert sgd.param_groups[0]["momentum"] == 0.3
    adam = torch.optim.Adam(net.parameters(), lr=0.1)
    loop._schedule(adam, "one_cycle", 0.1, 2, 3)
    assert adam.param_groups[0]["betas"][0] == pytest.approx(0.95)  # the recipe's: 0.95 -> 0.85 -> 0.95
