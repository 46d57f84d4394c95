import SerialRuntime
import Testing

// README.md, sections "Timers", "Countdowns", "Polling" and "Priority requests". These compile;
// they are not run (they would take real seconds).

func readmeTimers() throws {
    // example: README Timers
    let queue = SerialQueue(label: "timers")
    let timers = TimerService(scheduler: queue, tick: .milliseconds(1))
    let retry = try timers.schedule(after: .seconds(2)) { print("retrying") }   // runs on `queue`
    retry.cancel()                                                                 // true: it will not run

    let pings = TimeoutManager<String>(scheduler: queue, workerCount: 2)
    try pings.run(taskKey: "db-1", timeout: .milliseconds(500)) {
        try ping("db-1")                         // a blocking call, on a worker SerialQueue
    } completion: { outcome in                   // exactly once, on `queue`
        print(outcome)                           // .completed, .failed, .timedOut or .cancelled
    }
    // end example
}

func readmeCountdowns(resendButton: ResendButton) async {
    // example: README Countdowns
    let ui = SerialQueue(label: "ui")
    let countdowns = CountdownManager(interval: .seconds(1), queue: ui)   // one ticker for all
    countdowns.register(resendButton, for: .seconds(60)) { button, tick, stop in
        if tick.isFinal { button.enable() } else { button.show(tick.remaining) }
        // tick.missedTicks > 0 after a suspend; `stop = true` ends the countdown now
    }
    for await tick in countdowns.countdown(from: .seconds(5)) {
        print(tick.remaining)                                             // cancelling the task cancels it
    }
    // end example
}

func readmePolling(api: API, id: String) async {
    // example: README Polling
    let poller = Poller<Int>(
        policy: PollPolicy(interval: .milliseconds(500), attemptTimeout: .seconds(2), deadline: .seconds(60)),
        scheduler: SerialQueue(label: "poll"),
        isDone: { $0 >= 100 },
        changes: .equality,                      // report a value only when it differs (==)
        query: .completion { attempt, reply in
            api.jobProgress(id, completion: reply)   // any thread, any time; only the current attempt counts
        })
    do {
        for try await percent in poller.updates { print("\(percent)%") }   // only changes; ends at 100
    } catch {
        print("gave up: \(error)")               // the last error, a PollError, or cancellation
    }
    // end example
}

func readmeRequests(api: API, token: String, auth: Auth) async {
    // example: README Requests
    let policy = RequestQueue<API>.Policy(
        classify: { _, outcome in
            switch outcome {
            case .failure(let error): return .retry(error)
            case .success(let response): return response.status == 401 ? .credentialExpired : .success
            }
        },
        refresh: { expired, done in auth.refresh(expired, completion: done) }
    )
    let requests = RequestQueue(transport: api, credential: token, policy: policy, scheduler: SerialQueue(label: "api"))
    requests.submit(.profile, priority: .high, kind: "profile") { result in print(result) }
    let feed = await requests.response(for: .feed)   // cancelling the task cancels the request
    // end example
    _ = feed
}
