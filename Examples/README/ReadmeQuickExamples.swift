import SerialRuntime

// README.md's short examples, async face first. Compiled, not run (the stand-ins are in
// StandIns.swift); `scripts/check-readme-examples.sh` checks that each README block is identical to
// one `// example:` region here or elsewhere under Examples/ (import lines aside).

func readmeQuickSerialQueue() async throws {
    // example: README quick SerialQueue
    let db = SerialQueue(label: "db")                        // one worker thread, one FIFO
    let count = try await db.run { try fetchRows().count }   // on the worker; the task awaits, no thread blocks
    db.async { print("on the worker") }                      // FIFO, never on the caller's thread
    let rows = try db.sync { try fetchRows() }               // on this thread, at its turn in the FIFO
    // end example
    _ = (count, rows)
}

func readmeQuickCountdowns(resendButton: ResendButton) async {
    // example: README quick Countdowns
    let countdowns = CountdownManager(interval: .seconds(1), queue: SerialQueue(label: "ui"))
    for await tick in countdowns.countdown(from: .seconds(5)) {
        print(tick.remaining)                                 // once a second; cancelling the task cancels it
    }
    countdowns.register(resendButton, for: .seconds(60)) { button, tick, _ in
        if tick.isFinal { button.enable() } else { button.show(tick.remaining) }
    }
    // end example
}
