"""Asyncio producers of typed events (``tui.core.events``): log tailers, GPU pollers, processes,
the remote agents, the Slurm job. ``tui.sources.factory`` picks the ones a command's options ask for.
"""
