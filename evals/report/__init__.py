"""The report: comparison tables, statistics, the HTML view, Markdown, exports."""
