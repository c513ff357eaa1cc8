"""The arena: bot processes, clocks, games, matches, tournaments, standings and the command line."""

__version__ = "0.1.0"
