"""Launching servers: what to run (``spec``), how (``runner.Runner``: local, SSH, node sets, Slurm),
the attempt lifecycle (``controller.Launch``) and what an attempt's end leaves behind (``outcome``)."""
