import SerialRuntime
import SerialTesting

/// `countdown_tick_100k`: ns per countdown per tick (serial only: neither peer has countdowns).
enum CountdownRows {
    static let plans: [RowPlan] = [
        RowPlan(names: ["countdown_tick_100k"]) { runner in
            var row = Row(name: "countdown_tick_100k", unit: "ns/countdown/tick")
            let (countdowns, ticks) = (100_000, 20)
            row.measure(.serial, runner) { Self.tick(runner, countdowns: countdowns, ticks: ticks) }
            row.counts[.serial] = countdowns * ticks
            row.notes.append(
                "serial only: \(formatCount(countdowns)) countdowns (1 h, interval 1 s) on one CountdownManager, "
                    + "\(ticks) shared ticks driven on a VirtualScheduler (no waiting; the ticks run on the "
                    + "measuring thread); empty handlers")
            return [row]
        }
    ]

    /// A receiver with nothing in it: the handler's work is not what is measured.
    private final class Receiver: Sendable {}

    static func tick(_ runner: Runner, countdowns: Int, ticks: Int) -> Double {
        runner.median("countdown_tick serial ×\(formatCount(countdowns)) × \(ticks) ticks") {
            let scheduler = VirtualScheduler()
            let clock = VirtualBootClock(following: scheduler)
            let manager = CountdownManager(interval: .seconds(1), queue: scheduler, clock: clock)
            let receivers = (0..<countdowns).map { _ in Receiver() }
            for receiver in receivers {
                manager.register(receiver, for: .seconds(3600)) { _, _, _ in }
            }
            _ = scheduler.advance(by: .seconds(1))  // the first shared tick, untimed
            let started = Clock.now()
            for _ in 0..<ticks { _ = scheduler.advance(by: .seconds(1)) }
            let elapsed = Clock.now() - started
            precondition(manager.count == countdowns, "compare: countdowns ended early (\(manager.count) left)")
            manager.cancelAll()
            _ = scheduler.advance(by: .seconds(1))
            withExtendedLifetime(receivers) {}
            return Double(elapsed) / Double(countdowns * ticks)
        }
    }
}
