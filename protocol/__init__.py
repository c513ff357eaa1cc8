"""The wire contract between the referee and bots, the rules engine both sides use, and a kit for Python bots.

Importing this package imports nothing heavy: `protocol.rules` and `protocol.kit` stay free of trio and
pydantic so that bots start fast; `protocol.messages` (pydantic) is for the referee and the tests.
"""
