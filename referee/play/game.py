"""One game between two bot channels: handshake, new game, turns on the clock, adjudication, the record.

`run_game` measures every move itself: from immediately before the turn line is written to the bot's write of
the reply line's last byte (`BotChannel.last_line_ns`: the kernel's stamp on a stamped socket, else when the
read returned), and charges exactly that (`referee.timing.clock`). A move past its deadline loses on time only
if the bot's overrun is larger than the referee's own measured lateness during that move
(`referee.timing.latency`), as the move's timer judges it (`referee.timing.move_timer`); otherwise the game is
VOID, with a reason naming the referee's lag. The handshake and the new-game exchange have their own limits
(`Limits`) and are not charged. While a bot thinks it is pinged, so a hung bot is told from a slow one. Every
way a bot can fail becomes a forfeit with a reason a person can act on and the bot's last stderr lines; an
unexpected error in the referee's own code makes the game VOID (never scored). Cancellation propagates: the
caller records ABORTED if it wants.

The per-move path is kept lean (no validation of our own messages, one rules call per move) because the
referee's own time is never charged to a bot and a fast game should not be slowed by its referee.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn

import trio

from protocol.messages import GameOver, Info, MoveReply, NewGame, Pong, Ready
from protocol.options import OptionError
from protocol.rules import BLACK, WHITE, Color, IllegalMoveError, InvalidMoveError, Move, Position, Result, result_for
from referee.play.adjudication import Adjudicator, Verdict
from referee.play.controls import new_game_fields, nodes_over_limit
from referee.play.process import (
    BotChannel,
    BotFault,
    BotIllegalMove,
    BotProtocolError,
    BotTimeout,
    BotUnresponsive,
)
from referee.play.solver_worker import solve_elsewhere
from referee.record import GameRecord, GameSettings, MoveRecord, OptionValue, Termination
from referee.run.hints import with_hint
from referee.timing.clock import NS_PER_MS, Charge, GameClock
from referee.timing.move_timer import MoveTimer
from referee.timing.rules import Judgement

__all__ = ["Limits", "run_game"]

log = logging.getLogger(__name__)

COLORS: tuple[Color, Color] = (BLACK, WHITE)

MAX_INFOS_PER_MOVE = 16
"""Info messages kept per move: the last ones (the deepest search); the earlier ones are only counted."""
INFO_BUDGET_CHARS = 1 << 20
"""Info kept per side per game, in characters (roughly; see `_info_chars`): bounds a record whatever a bot sends."""


@dataclass(frozen=True)
class Limits:
    """Limits outside the game clock (seconds). None of these is charged to a bot's clock."""

    handshake_s: float = 10.0
    """From writing `hello` to the bot's hello (includes the bot's start-up)."""
    ready_s: float = 10.0
    """From writing `new_game` to `ready`."""
    ping_interval_s: float = 2.0
    """While a bot thinks: a ping after this long without a pong (or since the turn started)."""
    ping_timeout_s: float = 10.0
    """A bot that has not answered a ping after this long is unresponsive (hung, not just slow)."""
    game_over_s: float = 1.0
    """How long writing `game_over` may block before the referee gives up on that bot."""


class _HostLate(Exception):
    """A bot would have lost on time, but the referee measured more lateness of its own than the bot's overrun."""

    def __init__(self, reason: str, *, overrun_ms: float, lag_ms: float) -> None:
        super().__init__(reason)
        self.reason = reason
        self.overrun_ms = overrun_ms
        self.lag_ms = lag_ms


class _Adjudicated(Exception):
    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict


class _Forfeit(Exception):
    def __init__(self, color: Color, fault: BotFault) -> None:
        super().__init__(f"{color}: {fault.reason}")
        self.color = color
        self.fault = fault


def _json_int(value: int | None, unit: int = 1) -> bytes:
    return b"null" if value is None else b"%d" % (value // unit)


def _info_chars(info: Info) -> int:
    """About how many characters an info takes in a record (only the text and the pv can be long)."""
    return 64 + len(info.text or "") + 8 * len(info.pv or ())


_new_object = object.__new__
_set = object.__setattr__
_MOVE_FIELD_NAMES = frozenset(MoveRecord.model_fields)


def _move_record(fields: dict[str, Any]) -> MoveRecord:
    """A `MoveRecord` of `fields` (every field, trusted): what `model_construct` makes, without its per-field walk
    through defaults and aliases (on the per-move path it cost more than the rest of the record's making)."""
    record = _new_object(MoveRecord)
    _set(record, "__dict__", fields)
    _set(record, "__pydantic_fields_set__", set(_MOVE_FIELD_NAMES))
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


_PARSED: dict[str, Move] = {}
"""Move texts already parsed (a move is immutable; a board has a few thousand texts at most)."""
_PARSED_MAX = 1 << 14


def _parse_move(text: str) -> Move:
    """`Move.parse`, remembered (InvalidMoveError for text that is not a move)."""
    move = _PARSED.get(text)
    if move is None:
        move = Move.parse(text)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = move
    return move


class _Game:
    def __init__(
        self,
        game_id: str,
        black: BotChannel,
        white: BotChannel,
        settings: GameSettings,
        on_move: Callable[[MoveRecord, Position], None] | None,
        limits: Limits,
    ) -> None:
        self.game_id = game_id
        self.bots: dict[Color, BotChannel] = {BLACK: black, WHITE: white}
        self.settings = settings
        self.on_move = on_move
        self.limits = limits
        self.position = Position(settings.width, settings.height, settings.komi)
        for text in settings.opening:
            try:
                self.position.push(Move.parse(text))
            except ValueError as error:
                raise ValueError(f"the opening of game {game_id!r} is not playable: {error}") from None
        if self.position.is_over():
            raise ValueError(f"the opening of game {game_id!r} ends the game (two passes); leave moves for the bots")
        self.clock = GameClock(settings.time_control_for(BLACK), settings.time_control_for(WHITE), settings.margin_ms)
        rules = settings.adjudication
        self.adjudicator = Adjudicator(rules) if rules is not None and rules.active else None
        self.notes: list[str] = []
        self._node_limits = {color: settings.controls(color).nodes for color in COLORS}
        """Each side's node limit, looked up once a game (an info over it is noted, `_after_move`)."""
        self._options_sent: dict[Color, dict[str, OptionValue] | None] = dict.fromkeys(COLORS)
        self.moves: list[MoveRecord] = []
        # The turn line is built by hand from pieces kept up to date: on the per-move path, pydantic's
        # construct-and-dump of the whole history costs more than everything else the referee does.
        # Move texts are safe to quote as they are: each one passed Move.parse.
        self._turn_prefix = b'{"type":"turn","game_id":' + json.dumps(game_id).encode() + b',"moves":['
        self._history = b",".join(b'"%s"' % str(m).encode() for m in self.position.history)
        """The moves so far as the turn line lists them (each quoted, comma-separated), grown by each move."""
        self._bot_names = {color: self.bots[color].name for color in COLORS}
        clock = self.clock
        self._clock_fixed = {
            color: b'"increment_ms":%d,"move_limit_ms":%s,'
            % (clock.increment_ms(color), _json_int(clock.move_limit_ms(color)))
            for color in COLORS
        }
        """The parts of each side's turn clock that never change in a game (its time control's)."""
        self._periods = any(clock.moves_to_go(color) is not None for color in COLORS)
        self._info_budget = dict.fromkeys(COLORS, INFO_BUDGET_CHARS)
        self._cpu_game_ms = dict.fromkeys(COLORS, 0.0)
        self._cpu_mark: dict[Color, int | None] = {}
        """Each bot's CPU time (ns) at the end of its last move: what it uses from then to its next turn is its
        CPU on the opponent's move, known at its next turn (one read of its CPU a turn, not two)."""
        self._infos: deque[Info] = deque(maxlen=MAX_INFOS_PER_MOVE)
        """The latest infos of the move in progress: a bot may send as many as it likes on its own clock, but the
        referee's memory must not grow with them."""
        self._infos_seen = 0
        """Infos the bot sent during the move in progress, kept or not."""
        self._cpu_limit_ms = {color: self._cpu_limit(color) for color in COLORS}
        self._ping_interval_ns = round(limits.ping_interval_s * 1e9)
        self._ping_timeout_ns = round(limits.ping_timeout_s * 1e9)
        self._unpublished: MoveRecord | None = None
        """The last move, not yet given to `on_move`: its opponent's CPU during it is known only at the next turn."""

    # -- setup: handshake and new_game, both bots at once, not charged --------------------------------

    async def setup(self) -> None:
        faults: list[tuple[float, Color, BotFault]] = []

        async def prepare(color: Color) -> None:
            try:
                await self._prepare(color)
            except BotFault as fault:
                faults.append((trio.current_time(), color, fault))

        async with trio.open_nursery() as nursery:
            for color in COLORS:
                nursery.start_soon(prepare, color)
        if faults:
            # Both failing is rare (e.g. a broken build given as both sides): the first to fail loses.
            _, color, fault = min(faults, key=lambda f: f[0])
            raise _Forfeit(color, fault)

    async def _prepare(self, color: Color) -> None:
        bot = self.bots[color]
        limits = self.limits
        if bot.hello is None:
            await _exchange(bot, bot.handshake, limits.handshake_s, "failed the handshake", "hello", "hello")
        settings = self.settings
        assert bot.hello is not None
        try:
            fields, self._options_sent[color] = new_game_fields(
                settings, color, bot.hello.declared_options(), self._bot_names[color]
            )
        except OptionError as error:
            # Checked before the first game (referee.play.preflight): a bot that changed its options since is a set-up
            # problem, not the bot's fault, so the game is void (and the run stops if it keeps happening).
            raise RuntimeError(str(error)) from None
        new_game = NewGame(
            type="new_game",
            game_id=self.game_id,
            color=color,
            width=settings.width,
            height=settings.height,
            komi=settings.komi,
            opponent=self._bot_names[color.other],
            **fields,
        )

        async def start() -> None:
            await bot.send(new_game)
            # The session lets only ready, info and pong through here: wait for the ready.
            while not isinstance(await bot.receive(), Ready):
                pass

        await _exchange(bot, start, limits.ready_s, "failed to start the game", "ready", "new_game")

    # -- turns ---------------------------------------------------------------------------------------

    async def play(self) -> None:
        position = self.position
        for color in COLORS:
            self._cpu_mark[color] = self.bots[color].cpu_ns()
        while not position.is_over():
            color = position.turn
            try:
                await self._turn(color)
            except BotFault as fault:
                raise _Forfeit(color, fault) from None

    def _turn_line(self, color: Color) -> bytes:
        """The `Turn` message as a line (the same JSON `encode(Turn(...))` gives; a test checks it)."""
        clock = self.clock
        return b'%s%s],"clock":{"black_ms":%s,"white_ms":%s,%s"moves_to_go":%s}}\n' % (
            self._turn_prefix,
            self._history,
            _json_int(clock.remaining_ns(BLACK), NS_PER_MS),
            _json_int(clock.remaining_ns(WHITE), NS_PER_MS),
            self._clock_fixed[color],
            _json_int(clock.moves_to_go(color)) if self._periods else b"null",
        )

    async def _turn(self, color: Color) -> None:
        """One move: send the turn → await the reply or the timer → charge → judge → apply.

        Its time is the move's timer's (`referee.timing.move_timer`): from immediately before the turn's write to the
        bot's write of its reply, judged against the deadline with the host's share of a late move measured."""
        bot = self.bots[color]
        clock = self.clock
        line = self._turn_line(color)
        bot.check_idle()
        cpu_before = self._start_turn(color)
        timer = MoveTimer(bot.probe, bot.lag_source, bot.now_ns, clock.deadline_ns(color), stamped=bot.replies_stamped)
        try:
            timer.begin(await bot.send_turn(line, timer.written))
            reply = await self._await_reply(bot, timer)
            measured = timer.stop(bot.last_line_ns if reply is not None else bot.now_ns(), answered=reply is not None)
            charge = clock.charge(color, measured.elapsed_ns, timed_out=reply is None)
            if not charge.in_time:
                verdict = timer.judge(
                    measured,
                    charge,
                    margin_ns=clock.margin_ns,
                    who=f"{color} ({self._bot_names[color]})",
                    opponent_cpu_ns=lambda: self._off_turn_cpu_ns(color.other),
                )
                assert verdict is not None
                self._late(color, charge, verdict)
        finally:
            timer.close()
        assert reply is not None
        kept = self._apply(color, reply.move, charge, measured.lag_ns, cpu_before)
        if self._node_limits[color] is not None or self.adjudicator is not None:
            await self._after_move(color, kept)

    def _apply(
        self, color: Color, text: str, charge: Charge, lag_ns: int, cpu_before: int | None
    ) -> list[dict[str, Any]]:
        """Play a move in time on the board and record it (BotIllegalMove for one the rules refuse); the infos kept."""
        try:
            move = _parse_move(text)
        except InvalidMoveError:
            shown = text if len(text) <= 40 else f"{text[:40]}..."
            raise BotIllegalMove(
                f"sent a malformed move {shown!r}: expected 'pass' or a pit and a root cell with nothing between,"
                " like d5d4"
            ) from None
        try:
            self.position.push(move)
        except IllegalMoveError as error:
            raise BotIllegalMove(f"illegal move {error}") from None
        self._history += b',"%s"' % text.encode() if self._history else b'"%s"' % text.encode()
        cpu_after = self.bots[color].cpu_ns()
        self._cpu_mark[color] = cpu_after
        cpu_ms = None if cpu_before is None or cpu_after is None else max(0, cpu_after - cpu_before) / NS_PER_MS
        remaining = charge.remaining_ns
        infos = self._infos
        kept = self._keep_infos(color, infos) if infos else []
        record = _move_record(
            {
                "color": color,
                "move": text,
                "elapsed_ms": charge.elapsed_ns / NS_PER_MS,
                "clock_ms": None if remaining is None else remaining // NS_PER_MS,
                "latency_ms": lag_ns / NS_PER_MS,
                "infos": kept,
                "infos_dropped": self._infos_seen - len(kept),
                "cpu_ms": cpu_ms,
                "opponent_cpu_ms": None,  # known at the opponent's next turn (`_start_turn`)
            }
        )
        self.moves.append(record)
        self._unpublished = record
        if cpu_ms is not None:
            self._add_cpu(color, cpu_ms)
        return kept

    async def _after_move(self, color: Color, infos: list[dict[str, Any]]) -> None:
        """Note an info over the bot's node limit; end the game if adjudication says so (`_Adjudicated`).
        Between moves: no bot's clock runs while the solver works."""
        who = f"{color} ({self._bot_names[color]})"
        note = nodes_over_limit(self._node_limits[color], infos, who, len(self.position.history))
        if note is not None:
            self.notes.append(note)
        adjudicator = self.adjudicator
        if adjudicator is None:
            return
        adjudicator.record_scores(color, infos)
        verdict = None
        if adjudicator.wants_solver(self.position):
            answer = await solve_elsewhere(self.position, adjudicator.rules.solver_nodes)
            verdict = adjudicator.solver_verdict(self.position, answer)
        verdict = verdict or adjudicator.score_verdict(self.position)
        if verdict is not None:
            raise _Adjudicated(verdict)

    def _start_turn(self, color: Color) -> int | None:
        """Before `color`'s time starts: freeze the waiting bot if it may not ponder, sample the mover's CPU time and
        thaw it (`referee.host.containment`); what the mover used since its last move was on its opponent's move,
        the last one played. That move is complete now: it goes to `on_move`, and the CPU to the limit. The mover's
        CPU time now."""
        mover, waiting = self.bots[color], self.bots[color.other]
        if waiting.wait_for_turn():
            # Frozen from now on: what it burned since its move, before the freeze, is nobody's turn.
            self._cpu_mark[color.other] = waiting.cpu_ns()
        cpu_now = mover.cpu_ns()  # before a frozen mover is thawed: the opponent's turn ends here
        mover.begin_turn()
        mark = self._cpu_mark.get(color)
        used = None if mark is None or cpu_now is None else max(0, cpu_now - mark) / NS_PER_MS
        last = self._unpublished
        if last is not None and last.color != color:
            last.__dict__["opponent_cpu_ms"] = used  # a field already set (`_move_record`): no pydantic on the way
        self.publish()
        self._add_cpu(color, used)
        return cpu_now

    def publish(self) -> None:
        """Give the last move to `on_move` (at the next turn, or once the game has ended)."""
        last, self._unpublished = self._unpublished, None
        if last is not None and self.on_move is not None:
            self.on_move(last, self.position)

    def finish_moves(self) -> None:
        """At the end of the game: the waiting bot's CPU during the last move, and that move to `on_move`."""
        last = self._unpublished
        if last is not None:
            waiting = last.color.other
            cpu_now = self.bots[waiting].cpu_ns()
            mark = self._cpu_mark.get(waiting)
            if mark is not None and cpu_now is not None:
                last.opponent_cpu_ms = max(0, cpu_now - mark) / NS_PER_MS
        self.publish()

    def _cpu_limit(self, side: Color) -> float | None:
        limit_s = self.bots[side].cpu_limit_s()
        return None if limit_s is None else limit_s * 1000

    def _add_cpu(self, side: Color, ms: float | None) -> None:
        """Add CPU milliseconds to the side's game total; a bot past its CPU limit for the game (on its turns and
        off them) loses on time."""
        total = self._cpu_game_ms[side] = self._cpu_game_ms[side] + (ms or 0.0)
        limit_ms = self._cpu_limit_ms[side]
        if limit_ms is not None and total > limit_ms:
            limit_s = limit_ms / 1000
            own = sum(m.cpu_ms or 0.0 for m in self.moves if m.color == side)
            reason = (
                f"lost on CPU time: its processes used {total / 1000:.2f} s of CPU in this game"
                f" ({own / 1000:.2f} s on its turns, {(total - own) / 1000:.2f} s on its opponent's),"
                f" over its limit of {limit_s:g} s per game"
            )
            self.bots[side].give_up(reason)
            raise _Forfeit(side, BotTimeout(reason, overrun_ms=total - limit_ms))

    def _off_turn_cpu_ns(self, side: Color) -> int | None:
        """The CPU time `side`'s processes used since the end of its last move (None: not known)."""
        mark, cpu_now = self._cpu_mark.get(side), self.bots[side].cpu_ns()
        return None if mark is None or cpu_now is None else max(0, cpu_now - mark)

    def _late(self, color: Color, charge: Charge, verdict: Judgement) -> NoReturn:
        """A move past its deadline, as the timer judged it: lost on time, void for the host, or lost by the
        opponent whose processes kept the host busy (`referee.timing.rules.judge`)."""
        if verdict.give_up:
            self.bots[color].give_up(verdict.reason)
        overrun_ms = charge.overrun_ns / NS_PER_MS
        if verdict.opponent_lost:
            self.bots[color.other].give_up(verdict.reason)
            raise _Forfeit(color.other, BotTimeout(verdict.reason, overrun_ms=overrun_ms))
        if verdict.void:
            raise _HostLate(verdict.reason, overrun_ms=overrun_ms, lag_ms=verdict.host_ms)
        raise BotTimeout(verdict.reason, overrun_ms=overrun_ms)

    def _keep_infos(self, color: Color, infos: deque[Info]) -> list[dict[str, Any]]:
        """The infos of a move for its record: the latest ones that fit in what is left of the side's budget."""
        budget = self._info_budget[color]
        kept: list[dict[str, Any]] = []
        for info in reversed(infos):
            chars = _info_chars(info)
            if chars > budget:
                break
            budget -= chars
            kept.append(info.model_dump(exclude_none=True, exclude={"type"}))
        self._info_budget[color] = budget
        kept.reverse()
        return kept

    async def _await_reply(self, bot: BotChannel, timer: MoveTimer) -> MoveReply | None:
        """Read until the move, or None once the timer gives up on it (`MoveTimer.expired`: past the deadline and
        the host's measured delay); the infos that come before it go to `_infos` (the latest ones) and are counted.

        Times are in the bot channel's clock (ns). Pings the bot while it thinks: one without a pong for
        `ping_timeout_s` is unresponsive (hung, not slow).
        """
        infos = self._infos
        infos.clear()
        seen = 0
        check_at = timer.start_ns + self._ping_interval_ns
        pending: int | None = None  # the id of the ping waiting for its pong
        while True:
            message = bot.next_buffered()
            if message is None:
                due = timer.due_ns
                wake_at = check_at if due is None or check_at < due else due
                look = timer.look_ns
                if look is not None and look < wake_at:
                    wake_at = look
                if bot.has_news():
                    state = None  # the output's end, a bad line, or a pause due in a flood: through `receive`
                else:
                    # A cancellation the loop applied since this task last yielded: before a poll that would not see it.
                    await trio.lowlevel.checkpoint_if_cancelled()
                    # In a loop that plays only this game, a blocking poll waits for the reply at a fraction of the
                    # cost of a wait through trio; it returns to trio for anything else the loop has to do.
                    state = bot.wait_output(wake_at)
                if state == "ready":
                    bot.catch_up(to_a_line=True)
                    message = bot.next_buffered()  # the reply, usually (else part of a line: wait again)
                    if message is None:
                        continue
                if state == "interrupted":
                    await trio.lowlevel.checkpoint()
                    continue
                if state is None:
                    # One cancel scope per wait, for whichever comes first: a scope costs about as much as a round trip.
                    with trio.move_on_at(bot.to_trio_time(wake_at)):
                        message = await bot.receive()
                if message is None:
                    # Timed out. What had arrived by now counts, even if the loop was too busy to take it in.
                    bot.catch_up()
                    if bot.has_lines():
                        continue
                    now = bot.now_ns()
                    if look is not None and now >= look:
                        timer.look()
                    if due is not None and now >= due:
                        if timer.expired(now):
                            self._infos_seen = seen
                            return None
                        continue
                    if now < check_at:
                        continue
                    if pending is not None:
                        reason = (
                            f"stopped answering pings: no pong to ping {pending} within {self.limits.ping_timeout_s:g}"
                            f" s while thinking ({(now - timer.start_ns) / 1e9:.1f} s into its move)"
                        )
                        bot.give_up(reason)
                        raise BotUnresponsive(reason)
                    pending = await bot.send_ping()
                    check_at = now + self._ping_timeout_ns
                    continue
            # The session lets only move, info and pong through during a turn.
            if isinstance(message, MoveReply):
                self._infos_seen = seen
                return message
            if isinstance(message, Info):
                if bot.last_line_ns >= timer.start_ns:  # one written before the turn is not this move's
                    infos.append(message)
                    seen += 1
            elif isinstance(message, Pong) and message.id == pending:
                pending = None
                check_at = bot.last_line_ns + self._ping_interval_ns

    # -- the end -------------------------------------------------------------------------------------

    async def send_game_over(self, record: GameRecord) -> None:
        message = GameOver(
            type="game_over",
            game_id=self.game_id,
            result=record.result,
            winner=record.winner,
            reason=record.reason,
            termination=record.termination.value,
            black_score=record.black_score,
            white_score=record.white_score,
        )
        for color in COLORS:
            bot = self.bots[color]
            bot.begin_turn()  # a bot frozen for not pondering is thawed: the game is over
            if bot.closed:
                continue
            # A bot that is gone cannot be told; the record already says how the game ended.
            with trio.move_on_after(self.limits.game_over_s), contextlib.suppress(BotFault):
                await bot.send(message)

    def record(
        self,
        *,
        result: Result,
        winner: Color | None,
        termination: Termination,
        reason: str,
        started_at: datetime,
        loser: Color | None = None,
        scores: tuple[float, float] | None = None,
        overrun_ms: float | None = None,
        referee_lag_ms: float | None = None,
        stderr_tail: list[str] | None = None,
        adjudicated: str | None = None,
    ) -> GameRecord:
        self.finish_moves()
        sides = {color: self.bots[color].info() for color in COLORS}
        for color, info in sides.items():
            info.options = self._options_sent[color]
            own = [m.cpu_ms for m in self.moves if m.color == color]
            off = [m.opponent_cpu_ms for m in self.moves if m.color != color]
            info.cpu_ms = None if not own or None in own else sum(own)  # type: ignore[arg-type]
            info.off_turn_cpu_ms = None if not off or None in off else sum(off)  # type: ignore[arg-type]
        return GameRecord(
            game_id=self.game_id,
            black=sides[BLACK],
            white=sides[WHITE],
            settings=self.settings,
            moves=self.moves,
            result=result,
            winner=winner,
            termination=termination,
            reason=reason,
            loser=loser,
            black_score=None if scores is None else scores[0],
            white_score=None if scores is None else scores[1],
            overrun_ms=overrun_ms,
            referee_lag_ms=referee_lag_ms,
            stderr_tail=stderr_tail or [],
            final_position=self.position.to_string(),
            started_at=started_at,
            finished_at=datetime.now(UTC),
            limit_bound=self.settings.limit_bound,
            adjudicated=adjudicated,
            notes=self.notes,
        )


async def _exchange(
    bot: BotChannel, exchange: Callable[[], Awaitable[object]], seconds: float, what: str, reply: str, request: str
) -> None:
    """An untimed exchange with a bot before a game (the handshake, the new game) within its limit: a fault in it
    or no `reply` within `seconds` of `request` is the bot's, its reason prefixed with `what`."""
    try:
        with trio.move_on_after(seconds) as scope:
            await exchange()
    except BotFault as fault:
        fault.reason = f"{what}: {fault.reason}"
        raise
    if scope.cancelled_caught:
        reason = f"{what}: no {reply} within {seconds:g} s of {request}"
        bot.give_up(reason)
        raise BotProtocolError(reason)


async def run_game(
    game_id: str,
    black: BotChannel,
    white: BotChannel,
    settings: GameSettings,
    *,
    on_move: Callable[[MoveRecord, Position], None] | None = None,
    limits: Limits = Limits(),
) -> GameRecord:
    """Play one game and return its record. Bots whose `hello` is None are handshaken first.

    `on_move(record, position)` is called after each bot move with the live position (copy it to keep it).
    A fault by a bot is a forfeit (the record says why); an unexpected error in the referee is a VOID
    game. ValueError (before any message is sent) if the opening in `settings` is not playable.
    """
    started_at = datetime.now(UTC)
    game = _Game(game_id, black, white, settings, on_move, limits)
    try:
        try:
            await game.setup()
            await game.play()
        except _Adjudicated as adjudicated:
            verdict = adjudicated.verdict
            record = game.record(
                result=result_for(verdict.winner),
                winner=verdict.winner,
                termination=Termination.NORMAL,
                reason=verdict.reason,
                scores=verdict.scores,
                started_at=started_at,
                adjudicated=verdict.kind,
            )
        except _HostLate as late:
            record = game.record(
                result="*",
                winner=None,
                termination=Termination.VOID,
                reason=late.reason,
                overrun_ms=late.overrun_ms,
                referee_lag_ms=late.lag_ms,
                started_at=started_at,
            )
        except _Forfeit as forfeit:
            loser, fault = forfeit.color, forfeit.fault
            offender = game.bots[loser]
            with trio.CancelScope(shield=True):
                await offender.settle()
            winner = loser.other
            record = game.record(
                result=result_for(winner),
                winner=winner,
                termination=fault.termination,
                reason=with_hint(f"{loser} ({offender.name}) {fault.reason}", offender.stderr_tail(), offender.command),
                loser=loser,
                overrun_ms=fault.overrun_ms if isinstance(fault, BotTimeout) else None,
                stderr_tail=offender.stderr_tail(),
                started_at=started_at,
            )
        else:
            outcome = game.position.score_outcome()
            scored_winner = outcome.winner
            record = game.record(
                result=result_for(scored_winner),
                winner=scored_winner,
                termination=Termination.NORMAL,
                reason=f"two passes in a row: {outcome}",
                scores=(outcome.black_score, outcome.white_score),
                started_at=started_at,
            )
    except Exception as error:
        # Our own failure (a bug, a full disk, ...): never scored against a bot. Both channels are suspect.
        log.exception("game %s: referee error", game_id)
        for bot in game.bots.values():
            bot.give_up(f"the referee failed ({type(error).__name__})")
        record = game.record(
            result="*",
            winner=None,
            termination=Termination.VOID,
            reason=f"void: the referee failed ({type(error).__name__}: {error}); the game is not scored",
            started_at=started_at,
        )
    # The game has ended: a stop (Ctrl-C, a tournament stopping) must not lose it now. Telling the bots
    # takes at most `limits.game_over_s` each; the caller sees the cancellation at its next checkpoint.
    with trio.CancelScope(shield=True):
        await game.send_game_over(record)
    return record
