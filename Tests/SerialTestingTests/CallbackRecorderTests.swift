import SerialCore
import SerialTestSupport
import SerialTesting
import Testing

@Suite("CallbackRecorder")
struct CallbackRecorderTests {
    @Test func valuesRecordedOnOtherThreadsAreReturnedInArrivalOrder() throws {
        let recorder = CallbackRecorder<Int>("worker")
        let queue = SerialQueue(label: "recorder-1")
        for value in 0..<100 { queue.async { recorder.record(value) } }
        let start = MonotonicInstant.now()
        let values = try recorder.wait(forCount: 100, timeout: .seconds(20))
        #expect(MonotonicInstant.now() - start < .seconds(10), "the wait was not woken by record; it ran to its timeout")
        #expect(values == Array(0..<100))
        #expect(recorder.count == 100)
    }

    @Test func concurrentRecordsAreAllKept() throws {
        let recorder = CallbackRecorder<Int>("two queues")
        let first = SerialQueue(label: "recorder-a")
        let second = SerialQueue(label: "recorder-b")
        for value in 0..<500 {
            first.async { recorder.record(value) }
            second.async { recorder.record(1_000 + value) }
        }
        let values = try recorder.wait(forCount: 1_000, timeout: .seconds(10))
        #expect(values.count == 1_000)
        #expect(Set(values).count == 1_000)
        #expect(values.filter { $0 < 1_000 } == Array(0..<500), "one producer's values stay in order")
    }

    @Test func aWaitThatTimesOutThrowsAMessageNamingTheRecorderThePlaceAndWhatArrived() {
        let recorder = CallbackRecorder<String>("login callbacks")
        recorder.record("started")
        let start = MonotonicInstant.now()
        do {
            try recorder.wait(forCount: 2, timeout: .milliseconds(50))
            Issue.record("the wait returned although only one value arrived")
        } catch {
            let waited = MonotonicInstant.now() - start
            #expect(waited >= .milliseconds(50), "gave up after \(waited), before its timeout")
            #expect(error.description.contains("CallbackRecorder \"login callbacks\""), "\(error)")
            #expect(error.description.contains("for 2 values"), "\(error)")
            #expect(error.description.contains("1 arrived: [started]"), "\(error)")
            #expect(error.description.contains("CallbackRecorderTests.swift:"), "\(error)")
        }
    }

    @Test func aWaitForACondition() throws {
        let recorder = CallbackRecorder<Int>()
        let queue = SerialQueue(label: "recorder-2")
        for value in 1...10 { queue.async { recorder.record(value) } }
        let values = try recorder.wait(until: "a sum of 55") { $0.reduce(0, +) == 55 }
        #expect(values.count == 10)
    }

    @Test func voidRecordersCountCalls() throws {
        let done = CallbackRecorder<Void>("done")
        let queue = SerialQueue(label: "recorder-3")
        queue.asyncAfter(delay: .milliseconds(5)) { done.record() }
        #expect(try done.wait(forCount: 1).count == 1)
    }

    @Test func anAsyncWaitResumesWhenTheValueArrives() async throws {
        let recorder = CallbackRecorder<Int>("async")
        let queue = SerialQueue(label: "recorder-4")
        queue.asyncAfter(delay: .milliseconds(20)) { recorder.record(7) }
        let start = MonotonicInstant.now()
        // Generous bounds: a loaded machine may not run this task for minutes (under a sanitizer,
        // with the rest of the suite, it waited 130 s); a wait that is not resumed by `record`
        // runs to its 600 s timeout and fails the bound.
        let values = try await recorder.wait(forCount: 1, timeout: .seconds(600))
        #expect(MonotonicInstant.now() - start < .seconds(500), "the wait was not resumed by record; it ran to its timeout")
        #expect(values == [7])
    }

    @Test func anAsyncWaitAlreadySatisfiedReturnsAtOnce() async throws {
        let recorder = CallbackRecorder<Int>()
        recorder.record(1)
        let start = MonotonicInstant.now()
        #expect(try await recorder.wait(forCount: 1, timeout: .seconds(600)) == [1])
        #expect(MonotonicInstant.now() - start < .seconds(500), "a satisfied wait ran to its timeout")
    }

    @Test func anAsyncWaitThatTimesOutThrowsTheMessage() async {
        let recorder = CallbackRecorder<Int>("async timeout")
        await #expect(throws: RecorderTimeout.self) {
            try await recorder.wait(forCount: 1, timeout: .milliseconds(30))
        }
        do {
            try await recorder.wait(forCount: 1, timeout: .milliseconds(10))
        } catch {
            #expect("\(error)".contains("CallbackRecorder \"async timeout\""), "\(error)")
            #expect("\(error)".contains("0 arrived"), "\(error)")
        }
    }

    @Test func cancellingAnAsyncWaitEndsItWithCancellation() async {
        let recorder = CallbackRecorder<Int>("cancelled")
        let waiting = Task { try await recorder.wait(forCount: 1, timeout: .seconds(600)) }
        waiting.cancel()
        let start = MonotonicInstant.now()
        let result = await waiting.result
        #expect(MonotonicInstant.now() - start < .seconds(500), "a cancelled wait went on")
        #expect(throws: CancellationError.self) { try result.get() }
    }
}
