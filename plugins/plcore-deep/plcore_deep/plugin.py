"""The module named by the ``plcore`` entry point ``deep``: registers the learners and the
plugin's presets. Importing it imports no PyTorch (the learners load it at their first fit), nor
any learner's module.

Every learner is one :class:`DeepMethod` record of :data:`METHODS`: its option name, its class,
the names it is shown by, its own constructor parameters with their defaults and PLENCH's
search space for it. The learner's constructor is made from the record (its own parameters,
then the loop's :data:`SHARED`; :class:`plcore_deep._estimator.DeepLearner`), so a default is
written once, here.
"""

from __future__ import annotations

from collections import namedtuple

from plcore.registry import ComponentSpec, hookimpl, load_presets

#: One deep learner of the plugin, a record of :data:`METHODS`:
#:
#: - name: the option name (``+learner=<name>``);
#: - cls: ``"<family>:<Class>"``, the learner class in ``plcore_deep.<family>`` (one public module
#:   per family; its method in the private ``_<family>.py``);
#: - display_name: the name the papers print; description: one line for ``plcore list`` and the docs;
#: - params: the learner's own constructor parameters (beyond :data:`SHARED`) and their defaults,
#:   in the constructor's order;
#: - plench: what ``protocol.select.method=random`` draws from with no ``space``, PLENCH's
#:   distributions (the draws follow this order); None: the common three (:data:`PLENCH_COMMON`);
#: - test_params: the conformance suite's settings that differ from ``_TEST_PARAMS``.
DeepMethod = namedtuple("DeepMethod", "name cls display_name description params plench test_params",
                        defaults=({}, None, {}))

#: the constructor parameters of the shared training loop, which every deep learner takes after
#: its own, and their defaults (documented on :class:`plcore_deep._estimator.DeepLearner`)
SHARED = dict(network="mlp", hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200, batch_size=128,
              learning_rate=1e-3, weight_decay=1e-5, optimizer="adam", momentum=0.9, lr_schedule="constant",
              early_stopping=False, validation_fraction=0.1, n_iter_no_change=20, tol=1e-4,
              scoring="partial_log_likelihood", device="auto", n_threads="auto", random_state=None)

#: Nested-selection grid (``protocol.select`` with no ``space``), searched from candidate sets
#: only: the optimiser's step and L2 penalty, the two knobs every paper tunes. Inside PLENCH's
#: ranges for tabular data (Wang et al., ICLR 2025: lr 10^U(-4.5, -2.5), weight decay
#: 10^U(-6, -3)), half a decade either side of the default lr and two decades apart in weight
#: decay: 4 points, so that a nested 10-fold run is 130 fits, not 490.
SEARCH_SPACE = {"learning_rate": [3e-4, 3e-3], "weight_decay": [1e-5, 1e-3]}

#: ``protocol.select.method=random`` with no ``space`` draws from PLENCH's distributions
#: (``plench/core/hparams_registry.py``, Wang et al., ICLR 2025, its tabular MLP data sets), in
#: plcore's names (``plcore.utils.distributions``): lr -> learning_rate, 10**U(-4.5, -2.5);
#: weight_decay, 10**U(-6, -3); batch_size, 2**int(U(5, 8)) in {32, 64, 128}; then each
#: algorithm's own. RC is not in PLENCH: PRODEN's. Left out, each at plcore's default:
#: - values PLENCH fixes (PiCO conf_ema_range "0.95,0.8" = conf_ema; VALEN's alpha, beta, lambda,
#:   gamma, theta, sigma, correct, all 1.0, which plcore's VALEN does not expose);
#: - PiCO's momentum {0.8, 0.9} and POP's pop_interval {500, ..., 2000}, which PLENCH's PiCO
#:   (Adam) and POP never read;
#: - what PLENCH counts in optimiser steps, plcore in epochs (PLENCH's epoch: its training rows,
#:   0.81 of a tabular set, / batch_size; lost: 909 rows, 28, 14 or 7 steps per epoch at batch
#:   32, 64, 128): PiCO's prot_start, fixed at 178 steps (6, 12.5 or 25 epochs on lost; plcore's
#:   default 1 epoch), DIRK's prot_start, fixed at 178 steps as well (plcore's default 1 epoch,
#:   its authors' code), and VALEN's warm_up, 1000..5000 steps (35 to 700 epochs on lost, mostly
#:   past plcore's 200; plcore's default 10 epochs). An epoch count would depend on the data's
#:   size and the drawn batch size, so neither is drawn.
#: IDGP's warm_up_epoch (-> warm_up) is epochs in both (PLENCH's epoch: training rows / batch
#: size). CRDPLL has only the common three (its lam, 1, is fixed in PLENCH's class).
#: POP's warm_up (epochs) and rollWindow (-> window, epochs of confidences averaged) are epochs
#: in both.
#: FREDIS: update_interval is epochs in both (PLENCH: int(update_interval * steps per epoch)
#: steps); theta (1e-6) and delta (1.0) are fixed in PLENCH, so plcore's defaults.
#: ALIM: PiCO's (prot_start left out as for PiCO), plus start_epoch, epochs in both (PLENCH
#: compares its step count with start_epoch * steps per epoch), and noise_rate; PLENCH fixes
#: loss_weight_mixup (-> mixup_weight) at 1.0 and mixup_alpha at 4, plcore's defaults.
PLENCH_COMMON = {"learning_rate": {"log10_uniform": [-4.5, -2.5]}, "weight_decay": {"log10_uniform": [-6, -3]},
                 "batch_size": {"pow2_int": [5, 8]}}

#: fast settings for the common conformance test (a record's ``test_params`` are added to them)
_TEST_PARAMS = {"hidden_layer_sizes": (16,), "n_epochs": 40, "batch_size": 32, "learning_rate": 1e-2,
                "device": "cpu"}


#: the views' parameters (:mod:`plcore_deep._views`) of the learners with a second view
_VIEWS = {"noise_scale": 0.1, "augmentation": "auto"}
_PICO = {"feat_dim": 128, "queue_size": 8192, "moco_m": 0.999, "proto_m": 0.99, "temperature": 0.07,
         "loss_weight": 0.5, "prot_start": 1, "conf_ema": (0.95, 0.8), **_VIEWS}
_PICO_SPACE = {**PLENCH_COMMON, "feat_dim": [64, 128, 256], "queue_size": [4096, 8192],  # moco_queue
               "moco_m": [0.9, 0.999], "proto_m": [0.99, 0.9], "loss_weight": [0.5, 1.0]}
#: The records' ``test_params``: CAVL commits to one hard target per row from the first step on,
#: so a small network can lock onto a wrong class on the raw (unscaled) blobs of the conformance
#: data; a wider one does not. DIRK's targets are its teacher's, which starts from its own random
#: draw and follows the student at moco_m = 0.99 per step: after the conformance fit's 160 steps
#: the initial draw still weighs 0.99^160 = 0.2, enough to anchor the 100 rows on its
#: preferences; at 0.9 it is gone. The queue learners (PiCO, DIRK, ALIM, PiCO+) run the suite
#: with a queue of 256 keys: the default 8192 makes every step a (batch x 8192) contrastive
#: product, minutes per learner.
_QUEUE = {"queue_size": 256}

_BASES = (
    DeepMethod("proden", "confidence:ProdenLearner", "PRODEN",
               "PRODEN (Lv et al., ICML 2020): confidence-weighted cross-entropy, confidences re-estimated per batch"),
    DeepMethod("rc", "confidence:RcLearner", "RC", "RC, the risk-consistent estimator of Feng et al. (NeurIPS 2020)"),
    DeepMethod("cavl", "confidence:CavlLearner", "CAVL",
               "CAVL (Zhang et al., ICLR 2022): cross-entropy on the candidate with the largest class activation",
               test_params={"hidden_layer_sizes": (64,)}),
    DeepMethod("pop", "confidence:PopLearner", "POP", "POP, progressive purification (Xu et al., ICML 2023)",
               {"warm_up": 20, "window": 5, "theta": 1e-3, "inc": 1e-3, "theta_max": 0.4},
               {**PLENCH_COMMON, "window": [3, 4, 5, 6, 7], "warm_up": [10, 15, 20],  # rollWindow, warm_up
                "theta": {"log10_uniform": [-4.5, -2.5]}, "inc": {"log10_uniform": [-4.5, -2.5]}}),
    DeepMethod("crdpll", "confidence:CrdpllLearner", "CRDPLL",
               "CRDPLL (Wu et al., ICML 2022): consistency regularization over augmented views for deep PLL",
               {"lam": 1.0, "n_views": 3, "augmentation": "auto", "noise_scale": 0.1}),
    DeepMethod("cc", "candidate_losses:CcLearner", "CC",
               "CC, the classifier-consistent estimator of Feng et al. (NeurIPS 2020)"),
    DeepMethod("lws", "candidate_losses:LwsLearner", "LWS", "LWS, the leveraged weighted loss (Wen et al., ICML 2021)",
               {"beta": 2.0}, {**PLENCH_COMMON, "beta": [1, 2]}),  # lw_weight
    # EXP, MCL-*, ABS-*: the common three only (ABS_GCE's q is fixed at 0.7 in PLENCH: gce_q stays)
    DeepMethod("exp", "candidate_losses:ExpLearner", "EXP",
               "EXP (Feng et al., ICML 2020): exponential upper bound of the multiple-complementary-label risk"),
    DeepMethod("mcl_gce", "candidate_losses:MclGceLearner", "MCL-GCE",
               "MCL-GCE (Feng et al., ICML 2020): unbiased multiple-complementary-label risk with the GCE loss",
               {"gce_q": 0.7}),
    DeepMethod("mcl_mse", "candidate_losses:MclMseLearner", "MCL-MSE",
               "MCL-MSE (Feng et al., ICML 2020): unbiased multiple-complementary-label risk with the squared error"),
    DeepMethod("abs_mae", "candidate_losses:AbsMaeLearner", "ABS-MAE",
               "ABS-MAE (Lv et al., TPAMI 2024): the absolute error averaged over the candidates"),
    DeepMethod("abs_gce", "candidate_losses:AbsGceLearner", "ABS-GCE",
               "ABS-GCE (Lv et al., TPAMI 2024): the GCE loss averaged over the candidates", {"gce_q": 0.7}),
    DeepMethod("pico", "contrastive:PicoLearner", "PiCO",
               "PiCO (Wang et al., ICLR 2022): contrastive label disambiguation with class prototypes",
               _PICO, _PICO_SPACE, _QUEUE),
    DeepMethod("able", "contrastive:AbleLearner", "ABLE",
               "ABLE (Xia et al., IJCAI 2022): ambiguity-induced contrastive learning for instance-dependent PLL",
               {"feat_dim": 128, "loss_weight": 1.0, "temperature": 0.07, **_VIEWS},
               {**PLENCH_COMMON, "feat_dim": [64, 128, 256], "loss_weight": [0.5, 1.0, 2.0],
                "temperature": [0.03, 0.05, 0.07, 0.09]}),
    # momentum -> moco_m (the teacher's moving average), moco_queue -> queue_size, weight -> loss_weight,
    # feat_temperature -> temperature; prot_start (178 steps) is not drawn
    DeepMethod("dirk", "contrastive:DirkLearner", "DIRK",
               "DIRK (Wu et al., AAAI 2024): distilling a momentum teacher's rectified confidences, "
               "with contrastive refinement",
               {"feat_dim": 128, "queue_size": 8192, "moco_m": 0.99, "temperature": 0.07, "dist_temperature": 0.4,
                "loss_weight": 1.0, "prot_start": 1, **_VIEWS},
               {**PLENCH_COMMON, "moco_m": [0.5, 0.9, 0.99], "queue_size": [4096, 8192], "feat_dim": [64, 128, 256],
                "loss_weight": [0.1, 0.3, 0.5, 0.7, 0.9, 1.0], "dist_temperature": [0.2, 0.4, 0.6],
                "temperature": [0.03, 0.05, 0.07, 0.09]},
               {"moco_m": 0.9, **_QUEUE}),
    DeepMethod("valen", "instance_dependent:ValenLearner", "VALEN",
               "VALEN (Xu et al., NeurIPS 2021): variational label enhancement for instance-dependent PLL",
               {"warm_up": 10, "n_neighbors": 3}, {**PLENCH_COMMON, "n_neighbors": [3, 4]}),  # knn
    DeepMethod("idgp", "instance_dependent:IdgpLearner", "IDGP",
               "IDGP (Qiao et al., ICLR 2023): decompositional generation process for instance-dependent PLL",
               {"warm_up": 10}, {**PLENCH_COMMON, "warm_up": [5, 10, 15, 20]}),  # warm_up_epoch
    # the complementary-label losses: the common three only (NN's beta is fixed at 0 in PLENCH: not drawn)
    DeepMethod("pc", "complementary:PcLearner", "PC",
               "PC (Ishida et al., NeurIPS 2017): pairwise-comparison loss on each non-candidate as a complementary "
               "label"),
    DeepMethod("forward", "complementary:ForwardLearner", "Forward",
               "Forward (Yu et al., ECCV 2018): forward correction with a uniform complementary transition matrix"),
    DeepMethod("nn", "complementary:NnLearner", "NN",
               "NN (Ishida et al., ICML 2019): unbiased complementary-label risk with non-negative partial risks",
               {"beta": 0.0}),
    DeepMethod("ga", "complementary:GaLearner", "GA",
               "GA (Ishida et al., ICML 2019): unbiased complementary-label risk, gradient ascent on negative partial "
               "risks"),
    DeepMethod("scl_exp", "complementary:SclExpLearner", "SCL-EXP",
               "SCL-EXP (Chou et al., ICML 2020): surrogate complementary loss exp(p) of each non-candidate"),
    DeepMethod("scl_nl", "complementary:SclNlLearner", "SCL-NL",
               "SCL-NL (Chou et al., ICML 2020): surrogate complementary loss -log(1 - p) of each non-candidate"),
    DeepMethod("l_w", "complementary:LwLearner", "L-W",
               "L-W (Gao & Zhang, ICML 2021): discriminative complementary-label loss with weights"),
    DeepMethod("op_w", "complementary:OpwLearner", "OP-W",
               "OP-W (Liu et al., AISTATS 2023): reweighted order-preserving complementary-label loss"),
    DeepMethod("fredis", "noise_robust:FredisLearner", "FREDIS",
               "FREDIS (Qiao et al., ICML 2023): candidate-set refinement and disambiguation for noisy partial labels",
               {"theta": 1e-6, "inc": 1e-6, "delta": 1.0, "dec": 1e-6, "times": 2, "change_size": 500,
                "update_interval": 20, "lam": 10.0, "alpha": 1.0},
               {**PLENCH_COMMON, "inc": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1], "dec": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1],
                "times": [1, 2, 3, 4, 5], "change_size": [50, 100, 500, 300, 800, 1000], "update_interval": [10, 20],
                "lam": [1, 10], "alpha": [1e-3, 1e-2, 1e-1, 1]}),
    DeepMethod("alim", "noise_robust:AlimLearner", "ALIM",
               "ALIM (Xu et al., NeurIPS 2023): PiCO with adjusted label importance for noisy partial labels",
               {"start_epoch": 40, "noise_rate": 0.2, "mixup_weight": 1.0, "mixup_alpha": 4.0, **_PICO},
               {**_PICO_SPACE, "start_epoch": [20, 40, 80, 100, 140], "noise_rate": [0.1, 0.2, 0.3, 0.4, 0.5, 0.7]},
               # ALIM's adjusted pseudo-labels start within the short test run; a short queue keeps
               # its contrastive and mixup terms fast (8192 keys: 4 minutes for the suite)
               {"start_epoch": 10, **_QUEUE}),
    # PiCO+: PiCO's, plus pure_ratio, chosen_neighbors (-> n_neighbors), temperature_guess, ur_weight and
    # cls_weight; prot_start (1 or 250 steps) and knn_start (2, 100 or 5000 steps) count steps in PLENCH
    # (not drawn, as PiCO's prot_start; plcore's defaults: 1 and 100 epochs, the authors' code)
    DeepMethod("pico_plus", "noise_robust:PicoPlusLearner", "PiCO+",
               "PiCO+ (Wang et al., TPAMI 2024): PiCO on a reliable set, with label guessing for the rest",
               {"pure_ratio": 0.6, "knn_start": 100, "n_neighbors": 16, "temperature_guess": 0.07, "ur_weight": 0.1,
                "cls_weight": 2.0, "mixup_alpha": 4.0, **_PICO},
               {**_PICO_SPACE, "pure_ratio": [0.6, 0.8, 0.95, 0.99, 1.0], "n_neighbors": [8, 16],
                "temperature_guess": [0.1, 0.07], "ur_weight": [0.1, 0.5], "cls_weight": [2, 3, 5]},
               {"knn_start": 20, **_QUEUE}),  # PiCO+'s kNN positives start within the short test run
    # CroSel is not in PLENCH: the common three
    DeepMethod("crosel", "crosel:CroselLearner", "CroSel",
               "CroSel (Tian et al., CVPR 2024): two networks cross-select confident pseudo-labels for each other",
               {"variant": "paper", "warm_up": 10, "threshold": 0.9, "lam_cr": 1.0, "mix_alpha": 0.75,
                "augmentation": "auto", "noise_scale": 0.1}),
)
_BY_NAME = {method.name: method for method in _BASES}

#: the conformal variants (Fuchs & Kalinke, UAI 2025): option name -> its base learner's
CONFORMAL_BASES = {"conf_proden": "proden", "conf_cc": "cc", "conf_cavl": "cavl", "conf_pop": "pop",
                   "conf_valen": "valen", "conf_pico": "pico", "conf_crosel": "crosel"}
#: every learner: the methods, then their conformal variants: ``Conf+X`` is X with conformal
#: candidate cleaning (``plcore_deep.conformal``), its cleaning's parameters before X's own
METHODS = (*_BASES, *(DeepMethod(name, f"conformal:Conformal{m.cls.split(':')[1]}", f"Conf+{m.display_name}",
                                 f"Conf+{m.display_name} (Fuchs & Kalinke, UAI 2025): {m.display_name} with conformal "
                                 "candidate cleaning",
                                 {"cleaning_alpha": 0.05, "cleaning_warm_up": 10, "correction": True,
                                  "as_authors_code": False, **m.params}, m.plench, m.test_params)
                      for name, m in ((name, _BY_NAME[base]) for name, base in CONFORMAL_BASES.items())))

#: the option table: option name (``+learner=<name>``) -> the learner class, ``"<module>:<Class>"``
LEARNER_OPTIONS = {method.name: f"plcore_deep.{method.cls}" for method in METHODS}
#: option name -> PLENCH's search space (a record's ``plench``)
PLENCH_SPACES = {method.name: PLENCH_COMMON if method.plench is None else method.plench for method in METHODS}


@hookimpl
def plcore_components():
    return [ComponentSpec(kind="learner", name=method.name, cls=LEARNER_OPTIONS[method.name],
                          config=dict(sorted({**SHARED, **method.params}.items())),
                          description=method.description, display_name=method.display_name,
                          search_space=SEARCH_SPACE, search_distributions=PLENCH_SPACES[method.name],
                          test_params={**_TEST_PARAMS, **method.test_params})
            for method in METHODS]


@hookimpl
def plcore_experiments():
    """The presets in ``plcore_deep/experiments/*.yaml``."""
    return load_presets("plcore_deep")
