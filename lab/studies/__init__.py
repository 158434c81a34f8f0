"""Studies built on the run and the scores: the sweep, the chapter's experiments, the
adversaries, and the serving benchmark."""
