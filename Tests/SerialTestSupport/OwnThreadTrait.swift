import Glibc
import SerialCore
import Testing

/// Runs each test it applies to on a thread of its own (a `SerialQueue` as the test's task
/// executor), not on one of Swift concurrency's cooperative threads.
///
/// For tests that keep a thread busy for long: model-checked property tests and workloads on
/// virtual time, which are CPU-bound for seconds (more under a sanitizer). The cooperative pool
/// has one thread per core, two on this project's machines, and every test starts at once: two
/// such tests on it leave no thread for the hundreds of async tests that only wait for a
/// callback, and those then wait for seconds (a minute under ThreadSanitizer) for a thread, close
/// to their own bounds. On a thread of its own the test competes for a core like any thread, and
/// the cooperative threads stay free for the tests that need them.
///
/// The test's task prefers the queue, so a synchronous test runs there whole, and an `async` one
/// between its suspensions. Its structured child tasks (`async let`, task groups) inherit the
/// preference and so run one at a time on that one thread: not for a test whose children must
/// run side by side (one waiting for its sibling would wait out its bound). Tasks it creates
/// with `Task {}` still run on the global executor.
public struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite: its tests get their own. Under ThreadSanitizer the trait stands aside: there a
        // thread per test costs more than the cooperative threads it frees (every-test pass,
        // quiet machine, 2026-11-27: 77 and 86 s with it, 30 and 30 s without; the debug pass
        // 10.9 and 11.2 s with it, 12.1 and 12.6 s without). SERIAL_TESTS_ON_COOPERATIVE_THREADS=1
        // turns it off anywhere, to measure what it changes.
        guard testCase != nil, !Sanitizers.threadSanitizerIsActive,
            getenv("SERIAL_TESTS_ON_COOPERATIVE_THREADS") == nil
        else { return try await function() }
        let queue = SerialQueue(label: "own-thread")
        try await withTaskExecutorPreference(queue) { try await function() }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Runs each test on a thread of its own, off Swift concurrency's cooperative pool: see
    /// `OwnThreadTrait`.
    public static var onItsOwnThread: Self { Self() }
}
