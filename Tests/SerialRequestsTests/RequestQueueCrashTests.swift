import SerialRequests
import SerialTestSupport
import SerialTesting
import Testing

/// Every trap of SerialRequests, in a child process (exit tests).
@Suite("RequestQueue traps on bad configuration")
struct RequestQueueCrashTests {
    @Test func maximumConcurrentBelowOneTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(TestQueue.Configuration(maximumConcurrent: 0))
        }
        expectMessage(result, "Configuration.maximumConcurrent is 0; it must be at least 1")
    }

    @Test func negativeMaximumRetriesTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(TestQueue.Configuration(maximumRetries: -1))
        }
        expectMessage(result, "Configuration.maximumRetries is -1; it must be at least 0")
    }

    @Test func negativeMaximumRedirectsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(TestQueue.Configuration(maximumRedirects: -1))
        }
        expectMessage(result, "Configuration.maximumRedirects is -1")
    }

    @Test func aRefreshLimitBelowOneTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(TestQueue.Configuration(refreshLimit: 0))
        }
        expectMessage(result, "Configuration.refreshLimit is 0")
    }

    @Test func aZeroRefreshWindowTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(TestQueue.Configuration(refreshWindow: .zero))
        }
        expectMessage(result, "Configuration.refreshWindow is 0.0 seconds")
    }

    @Test func aZeroRefreshTimeoutTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(TestQueue.Configuration(refreshTimeout: .zero))
        }
        expectMessage(result, "Configuration.refreshTimeout")
    }

    @Test func aZeroAgingIntervalTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(TestQueue.Configuration(agingInterval: .zero))
        }
        expectMessage(result, "Configuration.agingInterval")
    }

    @Test func aNegativeDefaultTimeoutTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(TestQueue.Configuration(defaultTimeout: .seconds(-1)))
        }
        expectMessage(result, "Configuration.defaultTimeout")
    }

    @Test func aBackoffThatShrinksTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(
                TestQueue.Configuration(
                    retryBackoff: RetryBackoff(initial: .seconds(1), multiplier: 0.5, maximum: .seconds(2))))
        }
        expectMessage(result, "retryBackoff.multiplier is 0.5; it must be at least 1")
    }

    @Test func anInfiniteBackoffMultiplierTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(
                TestQueue.Configuration(
                    retryBackoff: RetryBackoff(initial: .zero, multiplier: .infinity, maximum: .seconds(2))))
        }
        expectMessage(result, "retryBackoff.multiplier is inf; it must be finite")
    }

    @Test func aNegativeBackoffMaximumTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(
                TestQueue.Configuration(
                    retryBackoff: RetryBackoff(initial: .seconds(-2), multiplier: 2, maximum: .seconds(-1))))
        }
        expectMessage(result, "retryBackoff.initial is -2.0 seconds")
    }

    @Test func aBackoffMaximumBelowItsInitialDelayTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeQueue(
                TestQueue.Configuration(retryBackoff: RetryBackoff(initial: .seconds(2), maximum: .seconds(1))))
        }
        expectMessage(result, "retryBackoff.maximum is 1.0 seconds")
    }

    @Test func aZeroRequestTimeoutTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = makeQueue(TestQueue.Configuration())
            queue.submit(Call(name: "x"), timeout: .zero) { _ in }
        }
        expectMessage(result, "RequestQueue.submit: timeout is 0.0 seconds; it must be greater than zero")
    }

    @Test func aValidConfigurationDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            _ = makeQueue(TestQueue.Configuration(maximumConcurrent: 1, maximumRetries: 0, maximumRedirects: 0))
        }
    }
}

/// Checks that the child's standard error carries the trap message's words.
private func expectMessage(
    _ result: ExitTest.Result?, _ text: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    let output = result?.standardErrorText ?? ""
    #expect(output.contains(text), "trap message: \(output)", sourceLocation: sourceLocation)
}

private func makeQueue(_ configuration: TestQueue.Configuration) -> TestQueue {
    let scheduler = VirtualScheduler()
    let server = SimulatedServer(scheduler: scheduler)
    return TestQueue(
        transport: server, credential: 0, policy: server.policy(), configuration: configuration, scheduler: scheduler)
}

@Suite("LocalCredentialCoordinator traps on a bad lease duration")
struct LocalCredentialCoordinatorCrashTests {
    @Test func aZeroLeaseDurationTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = LocalCredentialCoordinator<Int>(scheduler: VirtualScheduler(), leaseDuration: .zero)
        }
        expectMessage(result, "LocalCredentialCoordinator: leaseDuration is 0.0 seconds; it must be greater than zero")
    }
}

@Suite("RequestQueue.CredentialLifetime traps on bad input, naming the field")
struct CredentialLifetimeCrashTests {
    @Test func aNegativeRefreshMarginTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TestQueue.CredentialLifetime(refreshMargin: .seconds(-1)) { _ in nil }
        }
        expectMessage(result, "CredentialLifetime.refreshMargin is -1.0 seconds; it must be at least zero")
    }

    @Test func aZeroRetryIntervalTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TestQueue.CredentialLifetime(retryInterval: .zero) { _ in nil }
        }
        expectMessage(result, "CredentialLifetime.retryInterval is 0.0 seconds; it must be greater than zero")
    }

    @Test(arguments: [-0.1, 1.5]) func aRetryJitterOutsideZeroToOneTraps(jitter: Double) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [jitter] in
            _ = TestQueue.CredentialLifetime(retryJitter: jitter) { _ in nil }
        }
        expectMessage(result, "CredentialLifetime.retryJitter is \(jitter); it must be between 0 and 1")
    }

    /// Not an argument: a captured NaN does not survive the trip to the child process.
    @Test func aNaNRetryJitterTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TestQueue.CredentialLifetime(retryJitter: .nan) { _ in nil }
        }
        expectMessage(result, "CredentialLifetime.retryJitter is nan; it must be between 0 and 1")
    }

    @Test func aZeroMarginAndFullJitterAreValid() async {
        await #expect(processExitsWith: .success) {
            _ = TestQueue.CredentialLifetime(refreshMargin: .zero, retryJitter: 1) { _ in nil }
        }
    }
}
