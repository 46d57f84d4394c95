import Logging
import SerialLogging
import SerialRuntime
import Synchronization
import Testing

@Suite("swift-log integration")
struct LoggingTests {
    @Test func aStallIsLoggedOnceAsAWarningWithTheQueueLabel() {
        let store = RecordingLogHandler.Store()
        let watchdog = StallWatchdog(logger: .recording(into: store), runningThreshold: .milliseconds(50))
        let queue = SerialQueue(label: "slow-db")
        watchdog.watch(queue)
        let release = Atomic<Bool>(false)
        queue.async {
            // Blocked until the stall has been logged (bounded: the test fails rather than hangs).
            _ = eventually(timeout: .seconds(20)) { release.load(ordering: .relaxed) }
        }
        #expect(eventually { !store.all.isEmpty }, "the stall was never logged")
        release.store(true, ordering: .relaxed)
        queue.sync {}
        watchdog.stop()
        let entries = store.all
        #expect(entries.count == 1)
        #expect(entries.first?.level == .warning)
        #expect(entries.first?.metadata["queue"] == "slow-db")
        #expect(entries.first?.metadata["stall"] == "running")
        #expect(entries.first?.message.contains("SerialQueue \"slow-db\"") == true)
    }

    @Test func aShutdownThatDropsWorkIsAWarningAndACleanOneANotice() {
        let store = RecordingLogHandler.Store()
        let logger = Logger.recording(into: store)
        let clean = SerialQueue(label: "clean")
        clean.async {}
        clean.shutdown(logger: logger)
        let dropping = SerialQueue(label: "dropping")
        dropping.suspend()
        for _ in 0..<3 { dropping.async {} }
        dropping.shutdown(.cancelPending, logger: logger)
        let entries = store.all
        #expect(entries.map(\.level) == [.notice, .warning])
        #expect(entries.last?.metadata["cancelled_work"] == "3")
        #expect(entries.last?.message.contains("dropped 3 item(s)") == true)
    }
}
