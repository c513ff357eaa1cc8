"""Play apart from coordination: one game (`game`), the loop or worker process that plays a slot's games (`loop`,
`worker`), the channel to a bot's process (`process`) and how its output is read (`reader`), its controls,
options and adjudication.
"""
