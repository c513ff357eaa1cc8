"""Before the first game: every bot given option values is started once and its declared options checked.

An option the bot does not declare, or a value its declaration does not take, is the user's mistake, so it is
one clear error before anything is played (`OptionsRefused`, naming the bot, the option and what the bot
offers), not a forfeit or a void game in the middle of a run. A bot that cannot start or answer hello here
is left to the run, which reports that in its own way.
"""

from __future__ import annotations

from pathlib import Path

import trio

from protocol.options import Option, OptionError, resolve_options
from referee.play.process import BotFault, BotStartError, open_bot
from referee.run.botspec import BotSpec

__all__ = ["OptionsRefused", "check_options", "declared_options"]


class OptionsRefused(ValueError):
    """Option values a bot does not take; the message lists every problem."""


async def _check_one(spec: BotSpec, log_dir: Path, start_timeout_s: float) -> str | None:
    try:
        async with open_bot(spec, log_dir) as process:
            with trio.move_on_after(start_timeout_s):
                hello = await process.handshake()
                try:
                    resolve_options(hello.declared_options(), spec.options, bot=spec.name)
                except OptionError as error:
                    return f"{error}; fix the option.NAME=VALUE words (or [bots.options])"
            return None
    except (BotFault, BotStartError):
        return None  # the run reports a bot that cannot start or answer, with its stderr


async def check_options(specs: list[BotSpec], log_dir: Path, start_timeout_s: float) -> None:
    """OptionsRefused when any bot given option values refuses them (all bots are checked at once)."""
    problems: list[str] = []

    async def check(spec: BotSpec) -> None:
        problem = await _check_one(spec, log_dir, start_timeout_s)
        if problem is not None:
            problems.append(problem)

    async with trio.open_nursery() as nursery:
        for spec in specs:
            if spec.options:
                nursery.start_soon(check, spec)
    if problems:
        raise OptionsRefused("\n".join(sorted(problems)))


async def declared_options(spec: BotSpec, log_dir: Path, start_timeout_s: float) -> list[Option]:
    """The options `spec`'s bot declares in its hello (BotStartError or BotFault if it cannot say)."""
    async with open_bot(spec, log_dir) as process:
        with trio.fail_after(start_timeout_s):
            hello = await process.handshake()
        return hello.declared_options()
