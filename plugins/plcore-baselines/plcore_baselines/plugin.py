"""The module named by the ``plcore`` entry point ``baselines``: the plugin's hooks."""

from plcore.registry import ComponentSpec, hookimpl, load_presets


# Nested-selection grids (``protocol.select`` with no ``space``). The methods' own papers are
# not in shared/papers; the CENDA and SAUTE papers state the configuration they ran each with
# (CENDA KDD 2021, Section 4.1; SAUTE KDD 2022, Section 4.1 "Experimental Setup"). Where that is
# a single value, the grid is a small one around it, as said below.

#: IPAL: CENDA and SAUTE Section 4.1 give only "balancing parameter alpha = 0.95" (k = 10 is the
#: authors' code's), no grid: a small grid around the defaults, k in {5, 10, 15} (the k of the
#: README's variants) x alpha in {0.5, 0.8, 0.95, 0.99} = 12 points.
IPAL_SEARCH_SPACE = {"k": [5, 10, 15], "alpha": [0.5, 0.8, 0.95, 0.99]}

#: PL-SVM: "regularization parameter pool with {10^-3, ..., 10^3}" (CENDA and SAUTE Section 4.1),
#: the paper's pool itself (7 points, ``plsvm.C_POOL``); the default C = 1 is its middle.
PLSVM_SEARCH_SPACE = {"C": [1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1e3]}

#: PL-ECOC: CENDA and SAUTE Section 4.1 give only the coding length ceil(10 log2 q) (34 for
#: q = 10, 40 on lost, 46 on msrc-v2), no grid: a small grid around it, code_length in
#: {20, 40, 60} x the binary-set size threshold min_fraction in {0.05, 0.1, 0.2} (default 0.1)
#: = 9 points. ``code_length="auto"`` is not a grid point: only numeric choices are logged as
#: ``selected.*`` metrics.
PLECOC_SEARCH_SPACE = {"code_length": [20, 40, 60], "min_fraction": [0.05, 0.1, 0.2]}

#: DELIN: CENDA Section 4.1 fixes k = 8 (and d' to CENDA's, which depends on the data), no grid:
#: k in {3, 5, 8, 10}, around 8 within the 3 .. 10 range the CENDA paper sweeps for its own
#: kNN step (Section 4.4, Fig. 2). 4 points; ``n_components`` is not searched (its range
#: depends on q).
DELIN_SEARCH_SPACE = {"k": [3, 5, 8, 10]}

#: DST-PLL: the paper fixes k = 10 (tabular and real-world data) and 20 (its VAE-encoded images),
#: no grid (Fuchs, Kalinke & Boehm, TMLR 2025; shared/design/frontier.md section 3.2): n_neighbors
#: in {5, 10, 15, 20}, the two values and one on either side. 4 points.
DSTPLL_SEARCH_SPACE = {"n_neighbors": [5, 10, 15, 20]}


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="learner", name="ipal", cls="plcore_baselines.ipal:IpalLearner",
                      display_name="IPAL",
                      config={"alpha": 0.95, "k": 10, "max_iter": 100, "n_jobs": None, "osqp_options": None,
                              "row_normalize": True, "nnls_solver": "active_set"},
                      description="IPAL: instance-based PLL by iterative label propagation "
                                  "(Zhang & Yu, IJCAI 2015)",
                      test_params={"k": 5, "max_iter": 20},
                      search_space=IPAL_SEARCH_SPACE),
        ComponentSpec(kind="learner", name="plsvm", cls="plcore_baselines.plsvm:PlSvmLearner",
                      display_name="PL-SVM",
                      config={"C": 1.0, "fit_intercept": True, "intercept_scaling": 1.0, "max_epochs": 100,
                              "max_iter": 50, "random_state": None, "tol": 0.01},
                      description="PL-SVM: max-margin between best candidate and best non-candidate "
                                  "(Nguyen & Caruana, KDD 2008)",
                      search_space=PLSVM_SEARCH_SPACE),
        ComponentSpec(kind="learner", name="plecoc", cls="plcore_baselines.plecoc:PlEcocLearner",
                      display_name="PL-ECOC",
                      config={"code_length": "auto", "estimator": None, "max_draws": 2000, "min_fraction": 0.1,
                              "min_side": 5, "random_state": None},
                      description="PL-ECOC: error-correcting output codes for partial labels "
                                  "(Zhang, Yu & Tang, TKDE 2017)",
                      test_params={"code_length": 5},
                      search_space=PLECOC_SEARCH_SPACE),
        ComponentSpec(kind="learner", name="dstpll", cls="plcore_baselines.dstpll:DstPllLearner",
                      display_name="DST-PLL",
                      config={"n_neighbors": 10, "random_state": None},
                      description="DST-PLL: kNN evidence by Yager's rule, with a reject option "
                                  "(Fuchs, Kalinke & Boehm, TMLR 2025)",
                      search_space=DSTPLL_SEARCH_SPACE),
        ComponentSpec(kind="reducer", name="delin", cls="plcore_baselines.delin:DelinReducer",
                      display_name="DELIN",
                      config={"k": 8, "max_iter": 50, "n_components": None, "n_jobs": None, "reg": 1e-06,
                              "tol": 1e-06, "update": "vote"},
                      description="DELIN: LDA on disambiguated confidences (Wu & Zhang, 2019)",
                      test_params={"max_iter": 5},
                      search_space=DELIN_SEARCH_SPACE),
    ]


@hookimpl
def plcore_experiments():
    """``cenda_table`` and ``cenda_table_transductive`` (``plcore_baselines/experiments/``)."""
    return load_presets("plcore_baselines")


@hookimpl
def plcore_report_writers():
    """``cenda_table``: the CENDA paper's Tables 6-7 from either preset's runs."""
    return {"cenda_table": "plcore_baselines.reports:cenda_table"}
