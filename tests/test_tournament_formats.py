"""The formats in real runs: Swiss, knockout and adaptive tournaments of real bots, a referee killed with
`kill -9` mid-round and mid-encounter, a latecomer and a retired bot, and a directory made before the pull
scheduler."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from referee.cli import main
from referee.run.knockout import Knockout
from referee.run.schedule import Format, Progress, ScheduledGame, Scheduler, make_schedule
from referee.run.store import DB_NAME, StoreReader, database_path
from referee.run.swiss import Swiss
from tests.conftest import descendants, reap_orphans
from tests.test_tournament import REPO, alive, done_count, read_games, wait_until

GOLDEN = Path(__file__).parent / "golden"
SMALL = ["--size", "5x5", "--tc", "5+0.1"]
SEEDED = [f"{name}=python3 -m sample_bots.random --seed {seed}" for seed, name in enumerate("abcde", start=1)]
"""Five seeded random bots: a game's moves depend only on its id and its bots, so two runs that schedule the same
games get the same results."""


def bot_args(bots: list[str]) -> list[str]:
    return [flag for bot in bots for flag in ("--bot", bot)]


def stored(out: Path) -> tuple[list[ScheduledGame], dict[int, float]]:
    """The games scheduled in `out` and the Black points of the done ones."""
    from protocol.rules import result_points

    with StoreReader(database_path(out)) as store:
        games = list(store.scheduled().values())
        points = {game.number: result_points(game.result) for game in store.done_games()}
    return games, points


def replayed(scheduler: Scheduler, bots: list[str], games: list[ScheduledGame], points: dict[int, float]) -> None:
    """Assert that the stored games are what the scheduler pairs given the stored results, call by call: each
    batch of games it would add, fed only the results of the games scheduled before them."""
    scheduled: list[ScheduledGame] = []
    while len(scheduled) < len(games):
        known = {n: p for n, p in points.items() if n <= len(scheduled)}
        new = scheduler.next_games(Progress(bots, scheduled, known))
        assert new, f"the scheduler adds nothing after {len(scheduled)} games, yet {len(games)} were stored"
        assert new == games[len(scheduled) : len(scheduled) + len(new)]
        scheduled.extend(new)
    assert scheduler.next_games(Progress(bots, scheduled, points)) == []


def kill_mid_run(out: Path, args: list[str], at_least: int) -> int:
    """Start a referee on `args`, kill it with SIGKILL once `at_least` games are done; the games done then."""
    command = [sys.executable, "-m", "referee", *args, "--out", str(out), "-q"]
    referee = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    bots: list[int] = []
    try:
        wait_until(lambda: done_count(out) >= at_least, 60, f"{at_least} finished games")
        bots = descendants(referee.pid)
        referee.send_signal(signal.SIGKILL)
        referee.communicate(timeout=10)
        wait_until(lambda: not any(alive(pid) for pid in bots), 5, "the orphaned bots to exit on EOF")
        reap_orphans(wait_s=5)
    finally:
        if referee.poll() is None:
            referee.kill()
            referee.communicate()
        for pid in bots:
            if alive(pid):
                os.killpg(pid, signal.SIGKILL)
    return done_count(out)


# -- Swiss ---------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the bot processes through /proc")
def test_a_swiss_killed_mid_round_resumes_with_nothing_lost_or_doubled_and_the_same_pairings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["tournament", *bot_args(SEEDED), "--format", "swiss", "--rounds", "4", *SMALL, "-j", "1"]
    whole = tmp_path / "whole"
    assert main([*args, "--out", str(whole), "-q"]) == 0
    out = tmp_path / "killed"
    done_before = kill_mid_run(out, args, at_least=5)  # round 2 is paired only after round 1's 4 games
    assert 5 <= done_before < 16
    capsys.readouterr()
    assert main([*args, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"16 games ({16 - done_before} played now)" in err
    records = read_games(out)
    assert [r.game_id for r in records] == [f"g{n:04d}" for n in range(1, 17)]  # each game once
    games, points = stored(out)
    assert (games, points) == stored(whole)  # the very games and results of the uninterrupted run
    replayed(Swiss(list("abcde"), 4, []), list("abcde"), games, points)
    standings = json.loads((out / "standings.json").read_text())
    table = standings["format_summary"]["tiebreaks"]
    assert [row["name"] for row in table] == [
        row["name"] for row in json.loads((whole / "standings.json").read_text())["format_summary"]["tiebreaks"]
    ]
    assert sum(row["byes"] for row in table) == 4  # five bots: a bye a round
    assert all({"buchholz", "sonneborn_berger", "head_to_head"} <= row.keys() for row in table)


# -- knockout ------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the bot processes through /proc")
def test_a_knockout_killed_mid_encounter_resumes_to_the_same_bracket(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["tournament", *bot_args(SEEDED), "--format", "knockout", "--games", "4", *SMALL, "-j", "1"]
    whole = tmp_path / "whole"
    assert main([*args, "--out", str(whole), "-q"]) == 0
    out = tmp_path / "killed"
    done_before = kill_mid_run(out, args, at_least=2)
    capsys.readouterr()
    assert main([*args, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    games, points = stored(out)
    assert done_before < len(games) and f"({len(games) - done_before} played now)" in err
    assert sorted(r.game_id for r in read_games(out)) == [f"g{n:04d}" for n in range(1, len(games) + 1)]

    def key(game: ScheduledGame) -> tuple[int, int, str, str]:
        return (game.pairing, game.round, game.black, game.white)

    assert sorted(map(key, games)) == sorted(map(key, stored(whole)[0]))
    bracket = json.loads((out / "standings.json").read_text())["format_summary"]
    assert bracket == json.loads((whole / "standings.json").read_text())["format_summary"]
    assert bracket["champion"] in "abcde" and len(bracket["bracket"]) == 7
    assert [e["note"] for e in bracket["bracket"][:4]].count("bye") == 3
    knockout = Knockout(list("abcde"), 4, [])
    summary = knockout.summary(Progress(list("abcde"), games, points))
    assert summary.champion == bracket["champion"]


def test_a_knockout_prints_its_bracket_and_final_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["tournament", *bot_args(SEEDED[:3]), "--format", "knockout", "--seeding", "random", *SMALL]
    assert main([*args, "--out", str(tmp_path / "ko"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "Bracket:" in out and "Champion: " in out
    assert "still tied, the higher seed advances" in out
    fingerprint = StoreReader(tmp_path / "ko" / DB_NAME).fingerprint() or {}
    assert fingerprint["format"] == "knockout" and fingerprint["format_settings"]["seeding"] == "random"
    assert fingerprint["format_settings"]["format_seed"] == 1


# -- adaptive ------------------------------------------------------------------------------------------------


def test_an_adaptive_run_spends_its_budget_on_undecided_neighbours_and_says_what_is_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bots = ["random", "greedy", "alpha=python3 -m sample_bots.alphabeta --depth 1"]
    args = ["tournament", *bot_args(bots), "--format", "adaptive", "--max-games", "12", *SMALL]
    assert main([*args, "--out", str(tmp_path / "ad"), "-q"]) == 0
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "ad" / "standings.json").read_text())["format_summary"]
    games, points = stored(tmp_path / "ad")
    assert len(points) == len(games) <= 12 and len(games) % 2 == 0
    assert sorted(summary["order"]) == ["alpha", "greedy", "random"]
    assert "Order: " in out
    if len(games) == 12 and summary["undecided"]:
        assert "Still undecided: " in out and "below 97.50%" in summary["notes"][0]
    for game in games:  # only neighbours in the order of the moment: each encounter a pair, colours swapped
        twin = next(g for g in games if g.pairing == game.pairing and g.number != game.number)
        assert (twin.black, twin.white) == (game.white, game.black) and twin.opening == game.opening


# -- a pool that grows ---------------------------------------------------------------------------------------


def test_a_latecomer_joins_a_finished_run_and_a_removed_bot_retires(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "t")
    base = ["tournament", "--games", "2", *SMALL, "--out", out]
    assert main([*base, *bot_args(SEEDED[:3])]) == 0
    before = read_games(Path(out))
    assert len(before) == 6
    capsys.readouterr()
    assert main([*base, *bot_args(SEEDED[:4]), "--events", str(tmp_path / "events.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "added latecomer d: 6 games scheduled" in err
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["type"] for e in events[:2]] == ["run_started", "notice"]
    assert events[1]["text"] == "added latecomer d: 6 games scheduled" and events[0]["games_total"] == 12
    after = read_games(Path(out))
    assert len(after) == 12 and after[:6] == before  # the earlier games kept, untouched
    assert all("d" in (r.black.name, r.white.name) for r in after[6:])
    # b retires: no new games for it (a fifth bot joins meanwhile), its games still count.
    capsys.readouterr()
    assert main([*base, *bot_args([SEEDED[0], SEEDED[2], SEEDED[3], SEEDED[4]])]) == 0
    err = capsys.readouterr().err
    assert "added latecomer e: 6 games scheduled" in err
    assert "retired b: no new games; its 6 games played still count" in err
    final = read_games(Path(out))
    assert len(final) == 18 and not any("b" in (r.black.name, r.white.name) for r in final[12:])
    standings = json.loads((Path(out) / "standings.json").read_text())
    assert {row["name"]: row["games"] for row in standings["bots"]} == {"a": 8, "b": 6, "c": 8, "d": 8, "e": 6}
    assert standings["format_summary"]["notes"] == ["b: retired (no new games; its games count)"]
    # A bot of both runs must be the same bot.
    changed = [SEEDED[0].replace("--seed 1", "--seed 9"), SEEDED[2], SEEDED[3], SEEDED[4]]
    assert main([*base, *bot_args(changed)]) == 2
    assert "bot 'a' had other settings (a.command" in capsys.readouterr().err


def test_a_swiss_field_is_fixed_once_started(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "s")
    base = ["tournament", "--format", "swiss", "--rounds", "1", *SMALL, "--out", out, "-q"]
    assert main([*base, *bot_args(SEEDED[:4])]) == 0
    capsys.readouterr()
    assert main([*base, *bot_args(SEEDED[:5])]) == 2
    assert "whose field is fixed once it has started: e cannot join it" in capsys.readouterr().err
    # d is removed and a second round played: d stays in the field and forfeits its encounter.
    more = [arg if arg != "1" else "2" for arg in base]
    assert main([*more, *bot_args(SEEDED[:3])]) == 0
    assert "suspended d: retired (removed from the config); its remaining games are forfeited" in (
        capsys.readouterr().err
    )
    records = read_games(Path(out))
    assert len(records) == 8
    second = [r for r in records[4:] if "d" in (r.black.name, r.white.name)]
    assert len(second) == 2 and all((r.black if r.loser == "black" else r.white).name == "d" for r in second)


def test_a_bot_whose_program_is_missing_is_suspended_before_the_first_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t"
    bots = [*SEEDED[:2], f"ghost={tmp_path / 'no-such-bot'}"]
    assert main(["tournament", *bot_args(bots), "--games", "2", *SMALL, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "suspended ghost: cannot start: bot 'ghost': the program" in err and "does not exist" in err
    records = read_games(out)
    ghost = [r for r in records if "ghost" in (r.black.name, r.white.name)]
    assert len(records) == 6 and len(ghost) == 4
    assert all((r.black if r.loser == "black" else r.white).name == "ghost" for r in ghost)


# -- a directory made before the pull scheduler --------------------------------------------------------------


def test_a_directory_made_by_the_static_scheduler_resumes_with_the_same_games_in_the_same_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Made by the referee before this change (commit 716be40), killed with kill -9 after 8 of 12 games (game 9 was
    # running): `cd / && alternator tournament --bot a=random --bot b=greedy --bot c=random --games 4 --size 4x4
    # --tc 5+0.1 -j 1 --out DIR`.
    out = tmp_path / "old"
    shutil.copytree(GOLDEN / "old-round-robin", out)
    kept = [line for line in (out / "games.jsonl").read_text().splitlines()]
    monkeypatch.chdir("/")  # the bots' folder, as recorded
    args = ["tournament", "--bot", "a=random", "--bot", "b=greedy", "--bot", "c=random"]
    args += ["--size", "4x4", "--tc", "5+0.1", "-j", "1", "--out", str(out)]
    assert main([*args, "--games", "4"]) == 0
    assert "12 games (4 played now)" in capsys.readouterr().err
    games, points = stored(out)
    assert games == make_schedule(["a", "b", "c"], Format.ROUND_ROBIN, 4, [])
    assert len(points) == 12
    assert (out / "games.jsonl").read_text().splitlines()[:8] == kept
    # More games per pairing: numbered as the static schedule numbered them.
    assert main([*args, "--games", "6"]) == 0
    games, points = stored(out)
    assert games == make_schedule(["a", "b", "c"], Format.ROUND_ROBIN, 6, []) and len(points) == 18


def test_a_swiss_database_is_rebuilt_from_games_jsonl_by_replaying_the_pairings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "s"
    args = ["tournament", *bot_args(SEEDED), "--format", "swiss", "--rounds", "3", *SMALL, "--out", str(out), "-q"]
    assert main(args) == 0
    before = stored(out)
    (out / DB_NAME).unlink()
    for suffix in ("-wal", "-shm"):
        (out / f"{DB_NAME}{suffix}").unlink(missing_ok=True)
    capsys.readouterr()
    assert main([*args, "--rebuild-db"]) == 0
    assert "from games.jsonl: 12 game(s)" in capsys.readouterr().err
    assert stored(out) == before
    adaptive = ["tournament", *bot_args(SEEDED[:3]), "--format", "adaptive", "--max-games", "4", *SMALL]
    assert main([*adaptive, "--out", str(tmp_path / "a"), "-q"]) == 0
    assert main([*adaptive, "--out", str(tmp_path / "a"), "--rebuild-db"]) == 2
    assert "an adaptive run cannot be rebuilt from games.jsonl" in capsys.readouterr().err


def test_a_knockout_seeded_by_rating_from_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "ko.toml"
    lines = ['format = "knockout"', 'seeding = "rating"', 'size = "5x5"', 'time_control = "5+0.1"']
    for seed, (name, rating) in enumerate((("a", 1000), ("b", 1900), ("c", 1500), ("d", None)), start=1):
        lines += ["[[bots]]", f'name = "{name}"', f'command = "python3 -m sample_bots.random --seed {seed}"']
        lines += [f"rating = {rating}"] if rating is not None else []
    config.write_text("\n".join(lines) + "\n")
    assert main(["tournament", str(config), "--out", str(tmp_path / "out"), "-q"]) == 0
    bracket = json.loads((tmp_path / "out" / "standings.json").read_text())["format_summary"]["bracket"]
    first = [(e["top"], e["top_seed"], e["bottom"], e["bottom_seed"]) for e in bracket if e["round"] == 1]
    assert first == [("b", 1, "d", 4), ("c", 2, "a", 3)]  # by rating; a bot without one after the rated ones
