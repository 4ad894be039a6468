"""The run machinery: the Hydra app (:mod:`~plcore.run.app`), the evaluation protocols
(:mod:`~plcore.run.protocols`) and their one table of defaults (:mod:`~plcore.run.defaults`),
the evaluated pipeline (:mod:`~plcore.run.pipeline`), nested label-free selection
(:mod:`~plcore.run.selection`), the sweep callbacks (:mod:`~plcore.run.callbacks`), reports
(:mod:`~plcore.run.report`), prediction with a logged model (:mod:`~plcore.run.predict`) and
the built-in components (:mod:`~plcore.run.builtins`)."""
