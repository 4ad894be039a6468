"""The module named by the ``plcore`` entry point ``deep``: registers the learners and the
plugin's presets. Importing it imports no PyTorch (the learners load it at their first fit)."""

from plcore.registry import ComponentSpec, hookimpl, load_presets

#: the option table: option name (``+learner=<name>``) -> the learner class, ``"<module>:<Class>"``
#: (one public module per family; its method in the private ``_<family>.py``)
LEARNER_OPTIONS = {
    "proden": "plcore_deep.confidence:ProdenLearner",
    "rc": "plcore_deep.confidence:RcLearner",
    "cavl": "plcore_deep.confidence:CavlLearner",
    "pop": "plcore_deep.confidence:PopLearner",
    "crdpll": "plcore_deep.confidence:CrdpllLearner",
    "cc": "plcore_deep.candidate_losses:CcLearner",
    "lws": "plcore_deep.candidate_losses:LwsLearner",
    "exp": "plcore_deep.candidate_losses:ExpLearner",
    "mcl_gce": "plcore_deep.candidate_losses:MclGceLearner",
    "mcl_mse": "plcore_deep.candidate_losses:MclMseLearner",
    "abs_mae": "plcore_deep.candidate_losses:AbsMaeLearner",
    "abs_gce": "plcore_deep.candidate_losses:AbsGceLearner",
    "pico": "plcore_deep.contrastive:PicoLearner",
    "able": "plcore_deep.contrastive:AbleLearner",
    "dirk": "plcore_deep.contrastive:DirkLearner",
    "valen": "plcore_deep.instance_dependent:ValenLearner",
    "idgp": "plcore_deep.instance_dependent:IdgpLearner",
    "pc": "plcore_deep.complementary:PcLearner",
    "forward": "plcore_deep.complementary:ForwardLearner",
    "nn": "plcore_deep.complementary:NnLearner",
    "ga": "plcore_deep.complementary:GaLearner",
    "scl_exp": "plcore_deep.complementary:SclExpLearner",
    "scl_nl": "plcore_deep.complementary:SclNlLearner",
    "l_w": "plcore_deep.complementary:LwLearner",
    "op_w": "plcore_deep.complementary:OpwLearner",
    "fredis": "plcore_deep.noise_robust:FredisLearner",
    "alim": "plcore_deep.noise_robust:AlimLearner",
    "pico_plus": "plcore_deep.noise_robust:PicoPlusLearner",
    "crosel": "plcore_deep.crosel:CroselLearner",
    "conf_proden": "plcore_deep.conformal:ConformalProdenLearner",
    "conf_cc": "plcore_deep.conformal:ConformalCcLearner",
    "conf_cavl": "plcore_deep.conformal:ConformalCavlLearner",
    "conf_pop": "plcore_deep.conformal:ConformalPopLearner",
    "conf_valen": "plcore_deep.conformal:ConformalValenLearner",
    "conf_pico": "plcore_deep.conformal:ConformalPicoLearner",
    "conf_crosel": "plcore_deep.conformal:ConformalCroselLearner",
}
#: the conformal variants (Fuchs & Kalinke, UAI 2025): option name -> its base learner's
CONFORMAL_BASES = {name: name.removeprefix("conf_") for name in LEARNER_OPTIONS if name.startswith("conf_")}

#: fast settings for the common conformance test
_TEST_PARAMS = {"hidden_layer_sizes": (16,), "n_epochs": 40, "batch_size": 32, "learning_rate": 1e-2,
                "device": "cpu"}

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
_PLENCH_COMMON = {"learning_rate": {"log10_uniform": [-4.5, -2.5]}, "weight_decay": {"log10_uniform": [-6, -3]},
                  "batch_size": {"pow2_int": [5, 8]}}
PLENCH_SPACES = {
    "proden": _PLENCH_COMMON,
    "rc": _PLENCH_COMMON,
    "cc": _PLENCH_COMMON,
    "lws": {**_PLENCH_COMMON, "beta": [1, 2]},  # lw_weight
    "cavl": _PLENCH_COMMON,
    "pop": {**_PLENCH_COMMON, "window": [3, 4, 5, 6, 7], "warm_up": [10, 15, 20],  # rollWindow, warm_up
            "theta": {"log10_uniform": [-4.5, -2.5]}, "inc": {"log10_uniform": [-4.5, -2.5]}},
    "pico": {**_PLENCH_COMMON, "feat_dim": [64, 128, 256], "queue_size": [4096, 8192],  # moco_queue
             "moco_m": [0.9, 0.999], "proto_m": [0.99, 0.9], "loss_weight": [0.5, 1.0]},
    "valen": {**_PLENCH_COMMON, "n_neighbors": [3, 4]},  # knn
    "idgp": {**_PLENCH_COMMON, "warm_up": [5, 10, 15, 20]},  # warm_up_epoch
    "crdpll": _PLENCH_COMMON,
    "able": {**_PLENCH_COMMON, "feat_dim": [64, 128, 256], "loss_weight": [0.5, 1.0, 2.0],
             "temperature": [0.03, 0.05, 0.07, 0.09]},
    # momentum -> moco_m (the teacher's moving average), moco_queue -> queue_size, weight -> loss_weight,
    # feat_temperature -> temperature; prot_start (178 steps) is not drawn
    "dirk": {**_PLENCH_COMMON, "moco_m": [0.5, 0.9, 0.99], "queue_size": [4096, 8192], "feat_dim": [64, 128, 256],
             "loss_weight": [0.1, 0.3, 0.5, 0.7, 0.9, 1.0], "dist_temperature": [0.2, 0.4, 0.6],
             "temperature": [0.03, 0.05, 0.07, 0.09]},
    "fredis": {**_PLENCH_COMMON, "inc": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1],
               "dec": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1], "times": [1, 2, 3, 4, 5],
               "change_size": [50, 100, 500, 300, 800, 1000], "update_interval": [10, 20], "lam": [1, 10],
               "alpha": [1e-3, 1e-2, 1e-1, 1]},
    # EXP, MCL-*, ABS-*: the common three only (ABS_GCE's q is fixed at 0.7 in PLENCH: gce_q stays)
    "exp": _PLENCH_COMMON,
    "mcl_gce": _PLENCH_COMMON,
    "mcl_mse": _PLENCH_COMMON,
    "abs_mae": _PLENCH_COMMON,
    "abs_gce": _PLENCH_COMMON,
    # the complementary-label losses: the common three only (NN's beta is fixed at 0 in PLENCH: not drawn)
    **{name: _PLENCH_COMMON for name in ("pc", "forward", "nn", "ga", "scl_exp", "scl_nl", "l_w", "op_w")},
}
PLENCH_SPACES["alim"] = {**PLENCH_SPACES["pico"], "start_epoch": [20, 40, 80, 100, 140],
                         "noise_rate": [0.1, 0.2, 0.3, 0.4, 0.5, 0.7]}
#: PiCO+: PiCO's, plus pure_ratio, chosen_neighbors (-> n_neighbors), temperature_guess, ur_weight and
#: cls_weight; prot_start (1 or 250 steps) and knn_start (2, 100 or 5000 steps) count steps in PLENCH
#: (not drawn, as PiCO's prot_start; plcore's defaults: 1 and 100 epochs, the authors' code)
PLENCH_SPACES["pico_plus"] = {**PLENCH_SPACES["pico"], "pure_ratio": [0.6, 0.8, 0.95, 0.99, 1.0],
                              "n_neighbors": [8, 16], "temperature_guess": [0.1, 0.07], "ur_weight": [0.1, 0.5],
                              "cls_weight": [2, 3, 5]}
#: CroSel is not in PLENCH: the common three
PLENCH_SPACES["crosel"] = _PLENCH_COMMON
PLENCH_SPACES.update({name: PLENCH_SPACES[base] for name, base in CONFORMAL_BASES.items()})


#: CAVL commits to one hard target per row from the first step on, so a small network can lock
#: onto a wrong class on the raw (unscaled) blobs of the conformance data; a wider one does not.
#: DIRK's targets are its teacher's, which starts from its own random draw and follows the
#: student at moco_m = 0.99 per step: after the conformance fit's 160 steps the initial draw still
#: weighs 0.99^160 = 0.2, enough to anchor the 100 rows on its preferences; at 0.9 it is gone
#: The queue learners (PiCO, DIRK, ALIM, PiCO+) run the suite with a queue of 256 keys: the
#: default 8192 makes every step a (batch x 8192) contrastive product, minutes per learner.
_TEST_OVERRIDES = {"cavl": {"hidden_layer_sizes": (64,)}, "dirk": {"moco_m": 0.9, "queue_size": 256},
                   "pico": {"queue_size": 256},
                   # ALIM's adjusted pseudo-labels start within the short test run; a short queue keeps
                   # its contrastive and mixup terms fast (8192 keys: 4 minutes for the suite)
                   "alim": {"start_epoch": 10, "queue_size": 256},
                   # PiCO+'s kNN positives start within the short test run
                   "pico_plus": {"knn_start": 20, "queue_size": 256}}
_TEST_OVERRIDES.update({name: _TEST_OVERRIDES[base] for name, base in CONFORMAL_BASES.items()
                        if base in _TEST_OVERRIDES})


#: the constructor parameters every learner shares (the training loop's), and each one's own
_COMMON = {"batch_norm": False, "batch_size": 128, "device": "auto", "early_stopping": False,
           "hidden_layer_sizes": (500,), "learning_rate": 0.001, "lr_schedule": "constant", "momentum": 0.9,
           "network": "mlp", "n_epochs": 200, "n_iter_no_change": 20, "n_threads": "auto",
           "optimizer": "adam", "random_state": None, "scoring": "partial_log_likelihood", "tol": 0.0001,
           "validation_fraction": 0.1, "weight_decay": 1e-05}
_OWN = {"lws": {"beta": 2.0},
        "mcl_gce": {"gce_q": 0.7},
        "abs_gce": {"gce_q": 0.7},
        "pop": {"inc": 0.001, "theta": 0.001, "theta_max": 0.4, "warm_up": 20, "window": 5},
        "pico": {"augmentation": "auto", "conf_ema": (0.95, 0.8), "feat_dim": 128, "loss_weight": 0.5, "moco_m": 0.999,
                 "noise_scale": 0.1, "prot_start": 1, "proto_m": 0.99, "queue_size": 8192, "temperature": 0.07},
        "able": {"augmentation": "auto", "feat_dim": 128, "loss_weight": 1.0, "noise_scale": 0.1, "temperature": 0.07},
        "dirk": {"augmentation": "auto", "dist_temperature": 0.4, "feat_dim": 128, "loss_weight": 1.0, "moco_m": 0.99,
                 "noise_scale": 0.1, "prot_start": 1, "queue_size": 8192, "temperature": 0.07},
        "valen": {"n_neighbors": 3, "warm_up": 10},
        "idgp": {"warm_up": 10},
        "crdpll": {"augmentation": "auto", "lam": 1.0, "n_views": 3, "noise_scale": 0.1},
        "nn": {"beta": 0.0},
        "fredis": {"alpha": 1.0, "change_size": 500, "dec": 1e-06, "delta": 1.0, "inc": 1e-06, "lam": 10.0,
                   "theta": 1e-06, "times": 2, "update_interval": 20}}
_OWN["alim"] = {**_OWN["pico"], "mixup_alpha": 4.0, "mixup_weight": 1.0, "noise_rate": 0.2, "start_epoch": 40}
_OWN["crosel"] = {"augmentation": "auto", "lam_cr": 1.0, "mix_alpha": 0.75, "noise_scale": 0.1, "threshold": 0.9,
                  "variant": "paper", "warm_up": 10}
_CLEANING = {"as_authors_code": False, "cleaning_alpha": 0.05, "cleaning_warm_up": 10, "correction": True}
_OWN["pico_plus"] = {**_OWN["pico"], "cls_weight": 2.0, "knn_start": 100, "mixup_alpha": 4.0, "n_neighbors": 16,
                     "pure_ratio": 0.6, "temperature_guess": 0.07, "ur_weight": 0.1}
_OWN.update({name: {**_CLEANING, **_OWN.get(base, {})} for name, base in CONFORMAL_BASES.items()})
#: option name -> the name the papers print
_DISPLAY_NAMES = {"proden": "PRODEN", "rc": "RC", "cc": "CC", "lws": "LWS",
                  "exp": "EXP", "mcl_gce": "MCL-GCE", "mcl_mse": "MCL-MSE", "abs_mae": "ABS-MAE", "abs_gce": "ABS-GCE",
                  "cavl": "CAVL", "pop": "POP", "pico": "PiCO", "able": "ABLE", "dirk": "DIRK",
                  "valen": "VALEN", "idgp": "IDGP", "crdpll": "CRDPLL",
                  "pc": "PC", "forward": "Forward", "nn": "NN", "ga": "GA", "scl_exp": "SCL-EXP", "scl_nl": "SCL-NL",
                  "l_w": "L-W", "op_w": "OP-W", "fredis": "FREDIS", "alim": "ALIM", "pico_plus": "PiCO+",
                  "crosel": "CroSel"}
_DISPLAY_NAMES.update({name: f"Conf+{_DISPLAY_NAMES[base]}" for name, base in CONFORMAL_BASES.items()})
_DESCRIPTIONS = {
    "proden": "PRODEN (Lv et al., ICML 2020): confidence-weighted cross-entropy, confidences re-estimated per batch",
    "rc": "RC, the risk-consistent estimator of Feng et al. (NeurIPS 2020)",
    "cc": "CC, the classifier-consistent estimator of Feng et al. (NeurIPS 2020)",
    "lws": "LWS, the leveraged weighted loss (Wen et al., ICML 2021)",
    "exp": "EXP (Feng et al., ICML 2020): exponential upper bound of the multiple-complementary-label risk",
    "mcl_gce": "MCL-GCE (Feng et al., ICML 2020): unbiased multiple-complementary-label risk with the GCE loss",
    "mcl_mse": "MCL-MSE (Feng et al., ICML 2020): unbiased multiple-complementary-label risk with the squared error",
    "abs_mae": "ABS-MAE (Lv et al., TPAMI 2024): the absolute error averaged over the candidates",
    "abs_gce": "ABS-GCE (Lv et al., TPAMI 2024): the GCE loss averaged over the candidates",
    "cavl": "CAVL (Zhang et al., ICLR 2022): cross-entropy on the candidate with the largest class activation",
    "pop": "POP, progressive purification (Xu et al., ICML 2023)",
    "pico": "PiCO (Wang et al., ICLR 2022): contrastive label disambiguation with class prototypes",
    "able": "ABLE (Xia et al., IJCAI 2022): ambiguity-induced contrastive learning for instance-dependent PLL",
    "dirk": ("DIRK (Wu et al., AAAI 2024): distilling a momentum teacher's rectified confidences, "
             "with contrastive refinement"),
    "valen": "VALEN (Xu et al., NeurIPS 2021): variational label enhancement for instance-dependent PLL",
    "idgp": "IDGP (Qiao et al., ICLR 2023): decompositional generation process for instance-dependent PLL",
    "crdpll": "CRDPLL (Wu et al., ICML 2022): consistency regularization over augmented views for deep PLL",
    "pc": "PC (Ishida et al., NeurIPS 2017): pairwise-comparison loss on each non-candidate as a complementary label",
    "forward": "Forward (Yu et al., ECCV 2018): forward correction with a uniform complementary transition matrix",
    "nn": "NN (Ishida et al., ICML 2019): unbiased complementary-label risk with non-negative partial risks",
    "ga": "GA (Ishida et al., ICML 2019): unbiased complementary-label risk, gradient ascent on negative partial risks",
    "scl_exp": "SCL-EXP (Chou et al., ICML 2020): surrogate complementary loss exp(p) of each non-candidate",
    "scl_nl": "SCL-NL (Chou et al., ICML 2020): surrogate complementary loss -log(1 - p) of each non-candidate",
    "l_w": "L-W (Gao & Zhang, ICML 2021): discriminative complementary-label loss with weights",
    "op_w": "OP-W (Liu et al., AISTATS 2023): reweighted order-preserving complementary-label loss",
    "fredis": "FREDIS (Qiao et al., ICML 2023): candidate-set refinement and disambiguation for noisy partial labels",
    "alim": "ALIM (Xu et al., NeurIPS 2023): PiCO with adjusted label importance for noisy partial labels",
    "pico_plus": "PiCO+ (Wang et al., TPAMI 2024): PiCO on a reliable set, with label guessing for the rest",
    "crosel": "CroSel (Tian et al., CVPR 2024): two networks cross-select confident pseudo-labels for each other",
}
_DESCRIPTIONS.update({name: f"Conf+{_DISPLAY_NAMES[base]} (Fuchs & Kalinke, UAI 2025): {_DISPLAY_NAMES[base]} with "
                            "conformal candidate cleaning" for name, base in CONFORMAL_BASES.items()})


@hookimpl
def plcore_components():
    return [ComponentSpec(kind="learner", name=name, cls=path,
                          config={**_COMMON, **_OWN.get(name, {})}, description=_DESCRIPTIONS[name],
                          display_name=_DISPLAY_NAMES[name],
                          search_space=SEARCH_SPACE, search_distributions=PLENCH_SPACES[name],
                          test_params={**_TEST_PARAMS, **_TEST_OVERRIDES.get(name, {})})
            for name, path in LEARNER_OPTIONS.items()]


@hookimpl
def plcore_experiments():
    """The presets in ``plcore_deep/experiments/*.yaml``."""
    return load_presets("plcore_deep")
