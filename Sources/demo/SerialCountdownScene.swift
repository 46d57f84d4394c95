import SerialRuntime
import Synchronization

/// Countdowns sharing one ticker; one receiver released early, one stopping itself,
/// and one countdown consumed as an async sequence.
enum SerialCountdownScene {
    /// A thing with a countdown, like a "resend code" button.
    final class Button: Sendable {
        let name: String
        init(_ name: String) { self.name = name }
        deinit { if self.name == "leaver" { print("  [leaver] deinit: the manager held it only weakly") } }
    }

    static func run() async {
        print("== SerialCountdown: one ticker, many countdowns (100 ms ticks) ==")
        let queue = SerialQueue(label: "demo.countdown")
        let countdowns = CountdownManager(interval: .milliseconds(100), queue: queue)
        let start = ContinuousClock.now
        let stamp: @Sendable () -> String = {
            let elapsed = (ContinuousClock.now - start).saturatingNanoseconds / 1_000_000
            return "+\(String(elapsed).leftPadded(to: 4)) ms"
        }
        let handler: @Sendable (Button, CountdownTick, inout Bool) -> Void = { button, tick, stop in
            switch tick.end {
            case .finished?: print("  \(stamp()) [\(button.name)] done")
            case .cancelled?:
                print("  \(stamp()) [\(button.name)] cancelled with \(tick.remaining.milliseconds) ms left")
            case let end?:  // .stopped, .replaced, .shutDown: every ending now gets its one call
                print("  \(stamp()) [\(button.name)] \(end) with \(tick.remaining.milliseconds) ms left")
            case nil:
                print("  \(stamp()) [\(button.name)] \(tick.remaining.milliseconds) ms left")
                if button.name == "stopper" && tick.remaining <= .milliseconds(300) {
                    print("  \(stamp()) [stopper] sets the stop flag")
                    stop = true
                }
            }
        }

        let keeper = Button("keeper")
        let stopper = Button("stopper")
        let leaver = Mutex<Button?>(Button("leaver"))  // the only strong reference
        countdowns.register(keeper, for: .milliseconds(500), handler: handler)
        countdowns.register(stopper, for: .milliseconds(500), handler: handler)
        countdowns.register(leaver.withLock { $0! }, for: .milliseconds(500), handler: handler)
        let again = countdowns.register(keeper, for: .milliseconds(600), handler: handler)
        print("  keeper registered twice: \(again), still \(countdowns.count) countdowns")

        // Release "leaver" after the second tick: it gets no call after that.
        queue.asyncAfter(delay: .milliseconds(250)) {
            print("  \(stamp()) releasing leaver")
            leaver.withLock { $0 = nil }
        }
        // The async face: a 700 ms countdown joining the running ticker between two ticks. It is
        // called at the next shared tick, and finishes on the first tick at or after its deadline.
        var first = true
        for await tick in countdowns.countdown(from: .milliseconds(700)) {
            if first || tick.isFinal {
                let what = tick.isFinal ? "finished" : "first tick: \(tick.remaining.milliseconds) ms left"
                print("  \(stamp()) [sequence] \(what)")
            }
            first = false
        }
        queue.sync {}  // every call made before the sequence finished has printed
        print("  countdowns left: \(countdowns.count); the ticker is stopped until the next registration.")
        withExtendedLifetime((keeper, stopper)) {}
        _ = queue.shutdown()
        print("Every countdown ticked in the same batches; leaver went quiet when released, "
            + "stopper after its stop flag.\n")
    }
}

extension Duration {
    fileprivate var milliseconds: Int64 { self.saturatingNanoseconds / 1_000_000 }
}
