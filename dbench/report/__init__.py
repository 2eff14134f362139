"""`dbench report`: result files of any runs, runtimes and machines turned into
side-by-side tables, a support matrix, plots, and terminal / Markdown / CSV / xlsx / HTML outputs."""
