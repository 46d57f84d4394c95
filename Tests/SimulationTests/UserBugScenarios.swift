#if SERIAL_SIMULATION
import SerialRuntime
import SerialTesting

// Bugs users write in async Swift, each as a buggy and a fixed scenario, written against the
// public API only (SerialRuntime and SerialTesting): what `UserBugTableTests` hunts and replays.

/// A pair: the scenario with the bug, and the same scenario fixed.
struct UserBug: Sendable {
    let name: String
    let strategy: Simulation.Strategy
    let buggy: @Sendable () async -> Void
    let fixed: @Sendable () async -> Void
}

enum UserBugs {
    static let all: [UserBug] = [
        UserBug(name: "cache loads twice (actor reentrancy)", strategy: .random, buggy: cache(Cache.self), fixed: cache(FixedCache.self)),
        UserBug(name: "continuation resumed by timeout and answer", strategy: .random, buggy: timeout(fixed: false), fixed: timeout(fixed: true)),
        UserBug(name: "AsyncStream finished while yielding", strategy: .random, buggy: stream(fixed: false), fixed: stream(fixed: true)),
        UserBug(name: "balance checked then debited (actor reentrancy)", strategy: .random, buggy: account(fixed: false), fixed: account(fixed: true)),
        UserBug(name: "task group child outlives its deadline", strategy: .random, buggy: deadline(fixed: false), fixed: deadline(fixed: true)),
        UserBug(name: "cancellation racing a completion handler", strategy: .random, buggy: cancellation(fixed: false), fixed: cancellation(fixed: true)),
    ]

    // MARK: Actor reentrancy: a cache that loads twice

    /// Two callers ask for one key at once: the value must be loaded once.
    static func cache<C: LoadingCache>(_ type: C.Type) -> @Sendable () async -> Void {
        {
            let backend = Backend()
            let cache = C(backend: backend)
            async let first = cache.value(for: "k")
            async let second = cache.value(for: "k")
            let values = await [first, second]
            let loads = await backend.loads
            Simulation.check(loads == 1, "the key was loaded \(loads) times (values \(values))")
        }
    }

    /// Two withdrawals of 80 from a balance of 100: one must be refused.
    static func account(fixed: Bool) -> @Sendable () async -> Void {
        {
            let account = Account(balance: 100, fixed: fixed)
            async let first = account.withdraw(80)
            async let second = account.withdraw(80)
            let done = await [first, second]
            let balance = await account.balance
            Simulation.check(balance >= 0, "overdrawn: \(balance) after withdrawals \(done)")
        }
    }

    // MARK: A continuation resumed from two paths

    /// A request with a timeout: the answer and the timer race, and exactly one must resume.
    static func timeout(fixed: Bool) -> @Sendable () async -> Void {
        {
            let server = SerialQueue(label: "server")
            let timers = SerialQueue(label: "timers")
            let once = OnceFlag(queue: SerialQueue(label: "request-state"))
            let resumes = ResumeCounter()
            let outcome: String = await withCheckedContinuation { continuation in
                _ = timers.asyncAfter(delay: .milliseconds(100)) {
                    if fixed {
                        if once.claim() { resumes.resume(continuation, "timed out") }
                    } else if !once.isClaimed {  // BUG: checked, then claimed in another turn
                        once.set()
                        resumes.resume(continuation, "timed out")
                    }
                }
                _ = server.asyncAfter(delay: .milliseconds(100)) {
                    if once.claim() { resumes.resume(continuation, "answer") }
                }
            }
            Simulation.check(resumes.count == 1, "resumed \(resumes.count) times (first: \(outcome))")
        }
    }

    // MARK: Cancellation racing completion

    /// A download whose completion handler and its cancellation race: exactly one outcome.
    static func cancellation(fixed: Bool) -> @Sendable () async -> Void {
        {
            let download = Download(fixed: fixed)
            let resumes = ResumeCounter()
            let task = Task {
                await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
                    download.start { outcome in resumes.resume(continuation, outcome) }
                }
            }
            try? await Task.sleep(for: .milliseconds(10))  // the download is under way
            download.respond()  // its answer arrives, on the network's queue, as its owner cancels it
            // Not from `withTaskCancellationHandler`'s `onCancel`: it runs under the runtime's lock on
            // the task, and a queue operation there can leave a run `stuck` (see the article).
            task.cancel()
            download.cancel()
            let outcome = await task.value
            Simulation.check(resumes.count == 1, "the download ended \(resumes.count) times (first: \(outcome))")
        }
    }

    // MARK: AsyncStream finished while a producer yields

    /// A producer yields three values and a supervisor ends the stream: every value must arrive.
    static func stream(fixed: Bool) -> @Sendable () async -> Void {
        {
            let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
            let producer = Task {
                for value in 0..<3 {
                    continuation.yield(value)
                    await Task.yield()
                }
                if fixed { continuation.finish() }
            }
            if !fixed {
                Task { continuation.finish() }  // BUG: ends the stream without waiting for the producer
            }
            var received: [Int] = []
            for await value in stream { received.append(value) }
            await producer.value
            Simulation.check(received == [0, 1, 2], "received \(received)")
        }
    }

    // MARK: A task group child outliving a deadline

    /// An operation raced against a one-second deadline in a task group: the call must return by
    /// the deadline (plus a little), not when the slow operation ends.
    static func deadline(fixed: Bool) -> @Sendable () async -> Void {
        {
            let started = MonotonicInstant.now()
            let result = await withTaskGroup(of: String?.self) { group in
                group.addTask {
                    try? await Task.sleep(for: .seconds(60))  // the slow operation
                    return "done"
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(1))
                    return nil
                }
                let first = await group.next() ?? nil
                if fixed { group.cancelAll() }  // the fix: the loser stops at the deadline
                return first  // BUG without the fix: the group waits for the slow child here
            }
            let elapsed = started.duration(to: MonotonicInstant.now())
            Simulation.check(elapsed < .seconds(2), "returned \(result ?? "nil") after \(elapsed) (deadline 1 s)")
        }
    }
}

// MARK: Support types, as a user would write them

/// Counts resumes, and resumes the continuation the first time only (a second resume would
/// trap: the count is what the scenario checks).
final class ResumeCounter: @unchecked Sendable {  // simulated threads only, one at a time
    private(set) var count = 0

    func resume(_ continuation: CheckedContinuation<String, Never>, _ value: String) {
        self.count += 1
        if self.count == 1 { continuation.resume(returning: value) }
    }
}

/// "Has this request ended?", kept on a queue.
final class OnceFlag: @unchecked Sendable {  // `claimed` is touched only on `queue`
    private let queue: SerialQueue
    private var claimed = false

    init(queue: SerialQueue) { self.queue = queue }

    /// Claims the flag in one turn of the queue: `true` for the first caller only.
    func claim() -> Bool {
        self.queue.sync {
            defer { self.claimed = true }
            return !self.claimed
        }
    }

    var isClaimed: Bool { self.queue.sync { self.claimed } }
    func set() { self.queue.sync { self.claimed = true } }
}

/// A backend whose loads take 5 ms; it counts them on an actor and sleeps off it (a task with no
/// executor preference sleeping on a default actor escapes the run: see the article).
final class Backend: Sendable {
    private let counter = LoadCounter()
    var loads: Int { get async { await self.counter.loads } }

    func load(_ key: String) async -> Int {
        await self.counter.count()
        try? await Task.sleep(for: .milliseconds(5))
        return key.count
    }
}

actor LoadCounter {
    private(set) var loads = 0
    func count() { self.loads += 1 }
}

protocol LoadingCache: Actor {
    init(backend: Backend)
    func value(for key: String) async -> Int
}

actor Cache: LoadingCache {
    private let backend: Backend
    private var values: [String: Int] = [:]
    init(backend: Backend) { self.backend = backend }

    func value(for key: String) async -> Int {
        if let value = self.values[key] { return value }
        let value = await self.backend.load(key)  // BUG: a second caller runs here, finds no value
        self.values[key] = value
        return value
    }
}

actor FixedCache: LoadingCache {
    private let backend: Backend
    private var values: [String: Int] = [:]
    /// Callers waiting for a load in flight, by key (present while the key loads).
    private var waiting: [String: [CheckedContinuation<Int, Never>]] = [:]
    init(backend: Backend) { self.backend = backend }

    func value(for key: String) async -> Int {
        if let value = self.values[key] { return value }
        if self.waiting[key] != nil {  // the fix: a load in flight is joined, not repeated
            return await withCheckedContinuation { self.waiting[key]!.append($0) }
        }
        self.waiting[key] = []
        let value = await self.backend.load(key)
        self.values[key] = value
        for waiter in self.waiting.removeValue(forKey: key) ?? [] { waiter.resume(returning: value) }
        return value
    }
}

actor Account {
    private(set) var balance: Int
    private let fixed: Bool
    init(balance: Int, fixed: Bool) {
        self.balance = balance
        self.fixed = fixed
    }

    func withdraw(_ amount: Int) async -> Bool {
        guard self.balance >= amount else { return false }
        if self.fixed { self.balance -= amount }  // the fix: debit before the await
        await Task.yield()  // an approval: another withdraw runs here
        if !self.fixed { self.balance -= amount }  // BUG: the balance was checked before the await
        return true
    }
}

/// A download on a queue: `start` registers the completion handler, `respond` delivers the
/// answer from the network's queue, `cancel` ends the download with "cancelled" unless it has ended.
final class Download: @unchecked Sendable {  // `state` and `completion` are touched only on `queue`
    private let queue = SerialQueue(label: "download")
    private let network = SerialQueue(label: "network")
    private let fixed: Bool
    private var state = "idle"
    private var completion: (@Sendable (String) -> Void)?

    init(fixed: Bool) { self.fixed = fixed }

    func start(_ completion: @escaping @Sendable (String) -> Void) {
        self.queue.sync {
            self.state = "running"
            self.completion = completion
        }
    }

    func respond() {
        self.network.async { self.queue.async { if self.state == "running" { self.finish("finished") } } }
    }

    func cancel() {
        if self.fixed {
            self.queue.async { if self.state == "running" { self.finish("cancelled") } }
        } else {
            let running = self.queue.sync { self.state == "running" }
            self.queue.async { if running { self.finish("cancelled") } }  // BUG: the state may have changed since
        }
    }

    /// On the queue.
    private func finish(_ outcome: String) {
        self.state = outcome
        self.completion?(outcome)
    }
}
#endif
