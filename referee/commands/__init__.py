"""The subcommands of `alternator`, one module each (see referee.cli)."""
