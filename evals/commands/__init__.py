"""The subcommands of ``python -m evals``, one module per stage; ``evals.cli`` lists them."""
