import SerialRuntime
import SerialTesting
import Testing

// The examples of the doc comments in SerialCountdown, SerialPolling and SerialRequests, each
// an `// example:` region that scripts/check-readme-examples.sh compares with the comment.

func countdownManagerDocExample(resendButton: ResendButton) {
    // example: CountdownManager
    let queue = SerialQueue(label: "ui")
    let countdowns = CountdownManager(interval: .seconds(1), queue: queue)
    countdowns.register(resendButton, for: .seconds(60)) { button, tick, stop in
        if tick.isFinal { button.enable() } else { button.show(tick.remaining) }
    }
    // end example
}

func countdownSequenceDocExample(countdowns: CountdownManager) async {
    // example: CountdownManager.countdown(from:)
    for await tick in countdowns.countdown(from: .seconds(5)) {
        print("\(tick.remaining) left")        // last element: remaining zero, end == .finished
    }
    // end example
}

@Test("Doc example: VirtualBootClock") func virtualBootClockDocExample() {
    let receiver = ResendButton()
    // example: VirtualBootClock
    let scheduler = VirtualScheduler()
    let clock = VirtualBootClock(following: scheduler)
    let manager = CountdownManager(interval: .seconds(1), queue: scheduler, clock: clock)
    manager.register(receiver, for: .seconds(10)) { receiver, tick, stop in print(tick.remaining) }
    scheduler.advance(by: .seconds(2))          // ticks: 9 s, 8 s
    clock.simulateSuspend(for: .seconds(5))     // the machine sleeps 5 s
    scheduler.advance(by: .seconds(1))          // one tick: 2 s left, 5 ticks missed
    // end example
    #expect(manager.remaining(for: receiver) == .seconds(2))
}

func pollerDocExample(client: JobClient, jobID: String) async throws {
    // example: Poller
    let queue = SerialQueue(label: "poll")
    let poller = Poller<JobStatus>(
        policy: PollPolicy(interval: .milliseconds(500), attemptTimeout: .seconds(2), deadline: .seconds(60)),
        scheduler: queue,
        isDone: { $0.percent == 100 },
        changes: .equality,
        query: .completion { attempt, reply in
            client.fetchStatus(jobID) { result in reply(result) }   // any thread, any time
        })
    for try await status in poller.updates { print("\(status.percent)%") }
    // end example
}

func pollerUpdatesDocExample(poller: Poller<JobStatus>) async throws {
    // example: Poller.updates
    for try await status in poller.updates { render(status) }   // ends when done
    // end example
}

func pollPolicyDocExample() {
    // example: PollPolicy
    var policy = PollPolicy(interval: .milliseconds(500))
    policy.attemptTimeout = .seconds(2)      // one query may take at most 2 s
    policy.deadline = .seconds(60)           // the whole poll at most 60 s
    policy.backoff = .init(minimumDelay: .milliseconds(200), maximumDelay: .seconds(5), maximumConsecutiveErrors: 4)
    // end example
    _ = policy
}

func requestQueueDocExample(api: API, token: String, policy: RequestQueue<API>.Policy) {
    // example: RequestQueue
    let queue = RequestQueue(transport: api, credential: token, policy: policy, scheduler: SerialQueue(label: "api"))
    let handle = queue.submit(.profile, priority: .high, kind: "profile") { result in
        if case .success(let response) = result { print(response) }
    }
    handle.cancel()
    // end example
}

func credentialLifetimeDocExample(
    policy: inout RequestQueue<API>.Policy, queue: SerialQueue,
    expirySeconds: @escaping @Sendable (String) -> Int64, wallClockSeconds: @escaping @Sendable () -> Int64
) {
    // example: RequestQueue.CredentialLifetime
    // The token says when it expires, in seconds since 1970; the queue's clock is monotonic.
    policy.lifetime = RequestQueue<API>.CredentialLifetime(refreshMargin: .seconds(60)) { token in
        queue.now.advanced(by: .seconds(expirySeconds(token) - wallClockSeconds()))
    }
    // end example
}

func sharedCoordinatorDocExample(api: API, token: String, policy: RequestQueue<API>.Policy, queue: SerialQueue) {
    // example: LocalCredentialCoordinator
    let shared = LocalCredentialCoordinator<String>(scheduler: queue, leaseDuration: .seconds(30))
    let profiles = RequestQueue(transport: api, credential: token, policy: policy, coordinator: shared, scheduler: queue)
    let uploads = RequestQueue(transport: api, credential: token, policy: policy, coordinator: shared, scheduler: queue)
    // end example
    _ = (profiles, uploads)
}
