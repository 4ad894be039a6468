"""plcore-deep: deep partial-label learners on PyTorch.

PRODEN (Lv et al., ICML 2020), RC and CC (Feng et al., NeurIPS 2020), LWS (Wen et al., ICML
2021), EXP, MCL-GCE and MCL-MSE (Feng et al., ICML 2020), ABS-MAE and ABS-GCE (Lv et al., TPAMI
2024), CAVL (Zhang et al., ICLR 2022), POP (Xu et al., ICML 2023), CRDPLL (Wu et al., ICML
2022), PiCO (Wang et al., ICLR 2022), ABLE (Xia et al., IJCAI 2022), DIRK (Wu et al., AAAI
2024), VALEN (Xu et al., NeurIPS 2021) and IDGP (Qiao et al., ICLR 2023) on an MLP, a LeNet or
a linear model; the complementary-label losses PLENCH runs as partial-label baselines: PC,
Forward, NN, GA, SCL-EXP, SCL-NL, L-W and OP-W; and the learners for noisy candidate sets (the
true label may be left out): FREDIS (Qiao et al., ICML 2023), ALIM (Xu et al., NeurIPS 2023)
and PiCO+ (Wang et al., TPAMI 2024); CroSel (Tian et al., CVPR 2024) and the conformal
candidate cleaning of Fuchs & Kalinke (UAI 2025) around PRODEN, CC, CAVL, POP, VALEN, PiCO and
CroSel (``conformal``).

One module per family holds the scikit-learn learners (``confidence``, ``candidate_losses``,
``contrastive``, ``instance_dependent``, ``complementary``, ``noise_robust``, ``crosel``; ``conformal``
holds the conformal variants, whose cleaning is ``_cleaning``); its methods, the hooks the shared loop
(``_loop``) calls, live in the private module of the same name (``_confidence``, ...).
Importing this package does not import PyTorch (nor the learners' modules: names are served
on first use).
"""

from importlib.metadata import version as _version
from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_deep.candidate_losses import (AbsGceLearner, AbsMaeLearner, CcLearner, ExpLearner, LwsLearner,
                                              MclGceLearner, MclMseLearner)
    from plcore_deep.confidence import CavlLearner, CrdpllLearner, PopLearner, ProdenLearner, RcLearner
    from plcore_deep.contrastive import AbleLearner, DirkLearner, PicoLearner
    from plcore_deep.instance_dependent import IdgpLearner, ValenLearner
    from plcore_deep.complementary import (ForwardLearner, GaLearner, LwLearner, NnLearner, OpwLearner, PcLearner,
                                           SclExpLearner, SclNlLearner)
    from plcore_deep.noise_robust import AlimLearner, FredisLearner, PicoPlusLearner
    from plcore_deep.crosel import CroselLearner
    from plcore_deep.conformal import (ConformalCavlLearner, ConformalCcLearner, ConformalCroselLearner,
                                       ConformalPicoLearner, ConformalPopLearner, ConformalProdenLearner,
                                       ConformalValenLearner)

__version__ = _version("plcore-deep")   # from the package metadata: the version is pyproject.toml's

__all__ = ["ProdenLearner", "RcLearner", "CavlLearner", "PopLearner", "CcLearner", "LwsLearner", "ExpLearner",
           "MclGceLearner", "MclMseLearner", "AbsMaeLearner", "AbsGceLearner", "PicoLearner",
           "AbleLearner", "DirkLearner", "ValenLearner",
           "PcLearner", "ForwardLearner", "NnLearner", "GaLearner", "SclExpLearner", "SclNlLearner", "LwLearner",
           "OpwLearner", "IdgpLearner", "CrdpllLearner", "FredisLearner", "AlimLearner", "PicoPlusLearner",
           "CroselLearner", "ConformalProdenLearner", "ConformalCcLearner", "ConformalCavlLearner",
           "ConformalPopLearner", "ConformalValenLearner", "ConformalPicoLearner", "ConformalCroselLearner",
           "__version__"]

__getattr__, __dir__ = lazy_exports(globals(), {
    "ProdenLearner": "plcore_deep.confidence", "RcLearner": "plcore_deep.confidence",
    "CavlLearner": "plcore_deep.confidence", "PopLearner": "plcore_deep.confidence",
    "CcLearner": "plcore_deep.candidate_losses", "LwsLearner": "plcore_deep.candidate_losses",
    "ExpLearner": "plcore_deep.candidate_losses", "MclGceLearner": "plcore_deep.candidate_losses",
    "MclMseLearner": "plcore_deep.candidate_losses", "AbsMaeLearner": "plcore_deep.candidate_losses",
    "AbsGceLearner": "plcore_deep.candidate_losses",
    "PicoLearner": "plcore_deep.contrastive", "AbleLearner": "plcore_deep.contrastive",
    "DirkLearner": "plcore_deep.contrastive", "ValenLearner": "plcore_deep.instance_dependent",
    "PcLearner": "plcore_deep.complementary", "ForwardLearner": "plcore_deep.complementary",
    "NnLearner": "plcore_deep.complementary", "GaLearner": "plcore_deep.complementary",
    "SclExpLearner": "plcore_deep.complementary", "SclNlLearner": "plcore_deep.complementary",
    "LwLearner": "plcore_deep.complementary", "OpwLearner": "plcore_deep.complementary",
    "IdgpLearner": "plcore_deep.instance_dependent", "CrdpllLearner": "plcore_deep.confidence",
    "FredisLearner": "plcore_deep.noise_robust", "AlimLearner": "plcore_deep.noise_robust",
    "PicoPlusLearner": "plcore_deep.noise_robust", "CroselLearner": "plcore_deep.crosel",
    **{name: "plcore_deep.conformal" for name in ("ConformalProdenLearner", "ConformalCcLearner",
                                                  "ConformalCavlLearner", "ConformalPopLearner",
                                                  "ConformalValenLearner", "ConformalPicoLearner",
                                                  "ConformalCroselLearner")}})
