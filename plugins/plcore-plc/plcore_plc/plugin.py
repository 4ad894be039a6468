"""The plugin module named by the ``plc`` entry point (group ``plcore``): hooks only."""

from plcore.registry import ComponentSpec, hookimpl, load_presets

#: The paper's grid (Section 5.1, "Compared Methods"): "alpha, beta in {0.01, 0.1, 1}, gamma = 10
#: and k in {10, 15, 20, 25, 30, 40}", 54 points (``benchmarks/plc_selection.py --full-grid``).
PLC_PAPER_GRID = {"alpha": [0.01, 0.1, 1.0], "beta": [0.01, 0.1, 1.0], "k": [10, 15, 20, 25, 30, 40]}

#: What label-free selection searches: k only. alpha and beta scale the H and K terms of Eq. (11),
#: which are far above the Gram entries for any of the paper's values, so they do not move the
#: clusters (docs/results/plc.md measures it); the presets choose k on every partition by the
#: labelled rows' candidate sets (``plcore.run.selection.select_clusterer``).
PLC_SEARCH_SPACE = {"k": [10, 15, 20, 25, 30, 40]}


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="clusterer", name="plc", cls="plcore_plc.clusterers:PlcClusterer",
                      display_name="PLC",
                      config={"alpha": 0.01, "beta": 0.01, "f_step": "sequential", "f_sweeps": 1, "f_tol": 1e-05,
                              "gamma": 10.0, "inner_iter": 10, "k": 10, "lam": 1.0, "mu": 1.0, "n_clusters": None,
                              "n_init": 20, "outer_iter": 5, "random_state": None, "refresh_constraints": False,
                              "sd_solver": "classwise", "sd_tol": 0.001, "standardize": True, "w_tol": 1e-07,
                              "affinity_floor": 0.01, "eigen_solver": "auto"},
                      description="Partial-label clustering (PLC, Xie, Yang & Jia, IJCAI 2025)",
                      test_params={"k": 5, "outer_iter": 1, "inner_iter": 3, "n_init": 2},
                      search_space=PLC_SEARCH_SPACE),
        ComponentSpec(kind="clusterer", name="kmeans", cls="plcore_plc.clusterers:KMeansClusterer",
                      display_name="k-means",
                      config={"n_clusters": None, "n_init": 10, "random_state": None},
                      description="k-means baseline (scikit-learn ``KMeans``)",
                      test_params={"n_init": 2}),
        ComponentSpec(kind="clusterer", name="spectral", cls="plcore_plc.clusterers:SpectralClusterer",
                      display_name="SC",
                      config={"affinity": "nearest_neighbors", "gamma": None, "n_clusters": None, "n_init": 20,
                              "n_neighbors": 10, "random_state": None},
                      description="Spectral clustering baseline (scikit-learn ``SpectralClustering``)",
                      test_params={"n_init": 2}),
    ]


@hookimpl
def plcore_experiments():
    """The presets in ``plcore_plc/experiments/*.yaml`` (plc_lost, plc_msrc, paper_plc_*)."""
    return load_presets("plcore_plc")
