"""The run: the runner, its settings, run files, servers, progress and the record."""
