"""The module named by the ``plcore`` entry point ``baselines``: registers the components."""

from plcore.hookspecs import hookimpl
from plcore.registry import ComponentSpec

from plcore_baselines.delin import DelinReducer
from plcore_baselines.ipal import IpalLearner
from plcore_baselines.plecoc import PlEcocLearner
from plcore_baselines.plsvm import PlSvmLearner
from plcore_baselines.table import cenda_table_preset


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="learner", name="ipal", cls=IpalLearner,
                      description="IPAL: instance-based PLL by iterative label propagation "
                                  "(Zhang & Yu, IJCAI 2015)"),
        ComponentSpec(kind="learner", name="plsvm", cls=PlSvmLearner,
                      description="PL-SVM: max-margin between best candidate and best non-candidate "
                                  "(Nguyen & Caruana, KDD 2008)"),
        ComponentSpec(kind="learner", name="plecoc", cls=PlEcocLearner,
                      description="PL-ECOC: error-correcting output codes for partial labels "
                                  "(Zhang, Yu & Tang, TKDE 2017)"),
        ComponentSpec(kind="reducer", name="delin", cls=DelinReducer,
                      description="DELIN: LDA on disambiguated confidences (Wu & Zhang, 2019)"),
    ]


@hookimpl
def plcore_experiments():
    return {"cenda_table": cenda_table_preset(),
            "cenda_table_transductive": cenda_table_preset(transductive=True)}
