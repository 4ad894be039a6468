"""The run machinery: the Hydra entry point (:mod:`~plcore.run.app`) beside a job's lifecycle
(:mod:`~plcore.run.job`: signals, warnings, one-line errors, exit codes), the effective run
(:mod:`~plcore.run.resolve`) and the command line's checks (:mod:`~plcore.run.overrides`); the
evaluation protocols (:mod:`~plcore.run.protocols`, one module each) and their one table of
defaults (:mod:`~plcore.run.defaults`), the evaluated pipeline (:mod:`~plcore.run.pipeline`),
nested label-free selection (:mod:`~plcore.run.selection`), the sweep callbacks
(:mod:`~plcore.run.callbacks`), runs and job records read back (:mod:`~plcore.run.runs`), reports
(:mod:`~plcore.run.report`), prediction with a logged model (:mod:`~plcore.run.predict`) and the
built-in components (:mod:`~plcore.run.builtins`)."""
