"""The workspace environment, whole: a fresh folder of files under the file tools
(``environment``), what its records keep (``data``), the generated git history a task may lay
out in it (``fields``), what its answers may not falsely claim of its files (``claims``), and its
generated task source (``generate``: ``loopbench generate --source files``)."""
