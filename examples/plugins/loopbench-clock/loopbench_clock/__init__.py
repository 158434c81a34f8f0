"""A wall clock for loopbench, as another package adds one: an environment (``environment``), a
loop setting (``shout``) and a backend (``backend``), each its own module, found through the
entry points ``pyproject.toml`` declares. This package imports nothing, so a registry that
loads one of its modules loads only that one."""
