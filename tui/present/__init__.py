"""Text presenters: what `--plain` prints, the written report, the words shared with the dashboard."""
