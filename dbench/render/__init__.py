"""Terminal rendering (rich tables and progress) used only by the CLI."""
