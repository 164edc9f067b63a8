"""Watchtower: a terminal dashboard for the minutes in which an LLM inference server starts."""

__version__ = "0.1.0"
