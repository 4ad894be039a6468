"""The module named by the ``plcore`` entry point ``baselines``: the plugin's hooks."""

from plcore.hookspecs import hookimpl
from plcore.presets import load_presets
from plcore.registry import ComponentSpec

from plcore_baselines.delin import DelinReducer
from plcore_baselines.ipal import IpalLearner
from plcore_baselines.plecoc import PlEcocLearner
from plcore_baselines.plsvm import PlSvmLearner
from plcore_baselines.reports import cenda_table


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="learner", name="ipal", cls=IpalLearner,
                      description="IPAL: instance-based PLL by iterative label propagation "
                                  "(Zhang & Yu, IJCAI 2015)",
                      test_params={"k": 5, "max_iter": 20}),
        ComponentSpec(kind="learner", name="plsvm", cls=PlSvmLearner,
                      description="PL-SVM: max-margin between best candidate and best non-candidate "
                                  "(Nguyen & Caruana, KDD 2008)",
                      test_params={"C": 1.0}),  # no inner search over the C pool
        ComponentSpec(kind="learner", name="plecoc", cls=PlEcocLearner,
                      description="PL-ECOC: error-correcting output codes for partial labels "
                                  "(Zhang, Yu & Tang, TKDE 2017)",
                      test_params={"code_length": 5}),
        ComponentSpec(kind="reducer", name="delin", cls=DelinReducer,
                      description="DELIN: LDA on disambiguated confidences (Wu & Zhang, 2019)",
                      test_params={"max_iter": 5}),
    ]


@hookimpl
def plcore_experiments():
    """``cenda_table`` and ``cenda_table_transductive`` (``plcore_baselines/experiments/``)."""
    return load_presets("plcore_baselines")


@hookimpl
def plcore_report_writers():
    """``cenda_table``: the CENDA paper's Tables 6-7 from either preset's runs."""
    return {"cenda_table": cenda_table}
