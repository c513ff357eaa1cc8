"""The ladder: a continuous competition that entries join, update and leave while it runs (`alternator ladder`).

`store` (the SQLite truth), `rating` (Glicko-2), `policy` (who plays next), `runner` (plays, rates, stores),
`uploads` (participants' tokens and archives) and `server` (the leaderboard pages, JSON API and uploads).
"""
