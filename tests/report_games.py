"""Synthetic output directories for the report tests and benchmark: real games of the rules engine, no bots.

Random legal games (the engine's own move generator and scoring), with plausible times, clocks and infos,
and a few forfeits (time, crash with a stderr tail, illegal move), written as a tournament's games.jsonl.
"""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from protocol import rules
from protocol.messages import TimeControl
from referee.record import BotInfo, GameRecord, GameSettings, MoveRecord, Termination

BOTS = ("alpha", "beta", "gamma", "delta")
TIME_CONTROL = TimeControl(base_ms=10_000, increment_ms=100)


def random_game(
    number: int, black: str, white: str, rng: random.Random, *, width: int = 8, height: int = 8
) -> GameRecord:
    """One random game between two named sides; one game in ten (numbers 2, 12, ...) ends by a forfeit."""
    settings = GameSettings(width=width, height=height, komi=3.5, time_control=TIME_CONTROL, opening=[])
    position = rules.Position(width, height, 3.5)
    clocks = {"black": 10_000, "white": 10_000}
    moves: list[MoveRecord] = []
    forfeit = number % 10 == 2  # games 2, 12, 22, ...: on time, by a crash, by an illegal move, in turn
    stop_at = rng.randrange(4, 40) if forfeit else -1
    while not position.is_over() and len(moves) != stop_at:
        color = side(position.turn)
        placement = position.random_placement_id(rng)
        move = rules.PASS if placement == rules.PASS_ID or rng.random() < 0.03 else position.move_of(placement)
        elapsed = rng.lognormvariate(1.0, 1.0)
        clocks[color] = max(0, clocks[color] - round(elapsed) + 100)
        infos = []
        if color == "black":
            pv = [str(m) for m in position.legal_moves()[:3]]
            infos = [{"type": "info", "depth": rng.randrange(1, 9), "score": round(rng.uniform(-20, 20), 1), "pv": pv}]
        moves.append(
            MoveRecord.model_validate(
                {"color": color, "move": str(move), "elapsed_ms": elapsed, "clock_ms": clocks[color], "infos": infos}
            )
        )
        position.push(move)
    black_total, white_total = position.scores()
    started = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=number)
    fields: dict[str, Any] = {
        "game_id": f"g{number:05d}",
        "black": BotInfo(name=black, command=[black]),
        "white": BotInfo(name=white, command=[white]),
        "settings": settings,
        "moves": moves,
        "final_position": position.to_string(),
        "started_at": started,
        "finished_at": started + timedelta(seconds=1),
        "black_score": float(black_total),
        "white_score": white_total + 3.5,
    }
    if forfeit:
        loser = side(position.turn)
        kind = (Termination.TIME, Termination.CRASH, Termination.ILLEGAL_MOVE)[number // 10 % 3]
        tail = ["Traceback (most recent call last):", "RuntimeError: <boom> & done"] if kind == "crash" else []
        fields |= {
            "result": "0-1" if loser == "black" else "1-0",
            "winner": "white" if loser == "black" else "black",
            "termination": kind,
            "reason": f"{loser} forfeits: {kind}",
            "loser": loser,
            "overrun_ms": 12.5 if kind == "time" else None,
            "stderr_tail": tail,
        }
    else:
        outcome = position.score_outcome()
        winner = None if outcome.winner is None else side(outcome.winner)
        fields |= {
            "result": {"black": "1-0", "white": "0-1", None: "1/2-1/2"}[winner],
            "winner": winner,
            "termination": Termination.NORMAL,
            "reason": "two passes in a row",
        }
    return GameRecord.model_validate(fields)


def side(color: rules.Color) -> str:
    return "black" if color is rules.BLACK else "white"


def synthesize_tournament(
    out_dir: Path, games: int, *, seed: int = 1, bots: tuple[str, ...] = BOTS
) -> list[GameRecord]:
    """Write `games` random games of a round robin between `bots` to out_dir/games.jsonl; the records."""
    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    pairings = itertools.cycle([(a, b) for a in bots for b in bots if a != b])
    records = [random_game(n, *next(pairings), rng) for n in range(1, games + 1)]
    with (out_dir / "games.jsonl").open("w", encoding="utf-8") as file:
        for record in records:
            file.write(record.model_dump_json() + "\n")
    return records


def synthesize_stored_tournament(
    out_dir: Path, games: int, *, seed: int = 1, bots: tuple[str, ...] = BOTS, done: int | None = None
) -> list[GameRecord]:
    """A round robin of `bots` with `games` random games scheduled, the first `done` (default: all) done, as a run
    leaves it: the database (the schedule, each game saved through `RunStore`) and games.jsonl beside it; every
    scheduled game's record, in schedule order (the done ones in commit order)."""
    from referee.run.config import parse_config, resolve_plan
    from referee.run.schedule import make_schedule
    from referee.run.store import DB_NAME, RunStore

    pairings = len(bots) * (len(bots) - 1) // 2
    data = {"bots": [{"name": name, "command": "random"} for name in bots], "games": -(-games // pairings)}
    data |= {"size": "8x8", "time_control": "10+0.1"}
    plan = resolve_plan(parse_config(data, source="test"), base_dir=out_dir, source="test", default_out=out_dir)
    schedule = make_schedule(plan.bot_names, plan.format, plan.games_per_pairing, plan.openings)[:games]
    rng = random.Random(seed)
    records = [
        random_game(game.number, game.black, game.white, rng).model_copy(update={"game_id": game.game_id})
        for game in schedule
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    with RunStore(out_dir / DB_NAME) as store:
        store.start(plan.fingerprint, schedule)
        texts = [record.model_dump_json() for record in records[:done]]
        store.record_games(
            [(game.number, record) for game, record in zip(schedule, records[:done], strict=False)], texts
        )
    (out_dir / "games.jsonl").write_text("".join(text + "\n" for text in texts), encoding="utf-8")
    return records
