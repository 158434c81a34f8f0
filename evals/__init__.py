"""Task sets, the eval runner, scorers, result files and comparisons."""
