import SerialCore
import SerialRequests
import SerialTesting
import Testing

/// `RequestQueue.refreshSettled(within:)`: a refresh sent before `shutdown()` is not cut off: its
/// credential reaches the coordinator, and the wait ends only then (the fleet's lost rotation:
/// a process that exited with a rotated pair unpublished made the next holder reuse a spent
/// refresh token). On virtual time; the coordinator publishes 100 ms after it is asked, so that
/// the end of `Policy.refresh` and the end of the publish are apart.
@Suite("RequestQueue refreshSettled: a refresh out at shutdown is published before the wait ends")
struct RequestQueueRefreshSettledTests {
    /// A harness whose token expired before the start: its first request parks, and the refresh
    /// (answering after `refreshLatency`; `nil`: never) is out once the harness has run.
    private func harnessWithARefreshOut(
        refreshLatency: Duration?
    ) -> (Harness, SlowPublishCoordinator) {
        let scheduler = VirtualScheduler()
        let coordinator = SlowPublishCoordinator(scheduler: scheduler)
        let harness = Harness(
            scheduler: scheduler, coordinator: coordinator, lifetime: TokenLifetime(firstExpiresIn: .seconds(-1)))
        harness.server.state.withLock { $0.refreshLatency = refreshLatency }
        harness.submit("a")
        harness.run()
        return (harness, coordinator)
    }

    /// A task waiting in `refreshSettled(within:)`, with what it returned once it has.
    final class Waiter: Sendable {
        let answer = LockedValue<Bool?>(nil)
        let task: Task<Void, Never>

        /// Starts the wait and returns once its timer is armed on `harness`'s scheduler (it is
        /// then registered), so that virtual time cannot pass before the wait began.
        init(_ harness: Harness, within timeout: Duration) async throws {
            let timers = harness.scheduler.pendingCount
            let answer = self.answer
            self.task = Task { [queue = harness.queue] in
                let settled = await queue.refreshSettled(within: timeout)
                answer.withLock { $0 = settled }
            }
            try await yieldUntil("the wait is armed or answered") {
                harness.scheduler.pendingCount > timers || answer.withLock { $0 } != nil
            }
        }

        /// What it returned; fails instead of hanging when it has not returned.
        func answered() async throws -> Bool {
            try await yieldUntil("the wait returned") { self.answer.withLock { $0 } != nil }
            return try #require(self.answer.withLock { $0 })
        }
    }

    @Test func aRefreshOutAtShutdownIsPublishedAndTheWaitEndsOnlyThen() async throws {
        let (harness, coordinator) = self.harnessWithARefreshOut(refreshLatency: .seconds(1))
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.queue.shutdown() == 1)
        let waiter = try await Waiter(harness, within: .seconds(30))
        harness.advance(.milliseconds(1050))  // the refresh answered at +1 s; its publish is due at +1.1 s
        await Task.yield()
        #expect(waiter.answer.withLock { $0 } == nil, "returned before the new credential was published")
        #expect(coordinator.local.generation == 0)
        harness.advance(.milliseconds(100))
        #expect(try await waiter.answered() == true)
        #expect(coordinator.local.generation == 1, "the credential the server issued reached the coordinator")
        #expect(harness.recorder.only("a")?.errorName == "shutDown")
    }

    @Test func aRefreshThatNeverAnswersEndsTheWaitAtItsTimeoutNotBefore() async throws {
        let (harness, _) = self.harnessWithARefreshOut(refreshLatency: nil)
        harness.queue.shutdown()
        let waiter = try await Waiter(harness, within: .seconds(5))
        harness.advance(.milliseconds(4999))
        await Task.yield()
        #expect(waiter.answer.withLock { $0 } == nil)
        harness.advance(.milliseconds(1))
        #expect(try await waiter.answered() == false)
    }

    @Test func withNoRefreshOutTheWaitEndsAtOnce() async throws {
        let harness = Harness()
        harness.submit("a")
        harness.advance(.seconds(1))
        #expect(await harness.queue.refreshSettled(within: .seconds(5)) == true)
    }

    @Test func aCancelledWaitEndsWithFalse() async throws {
        let (harness, _) = self.harnessWithARefreshOut(refreshLatency: nil)
        let waiter = try await Waiter(harness, within: .seconds(3600))
        waiter.task.cancel()
        #expect(try await waiter.answered() == false)
        // Cancelled before it began: it does not wait either.
        let task = Task { await harness.queue.refreshSettled(within: .seconds(3600)) }
        task.cancel()
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await harness.queue.refreshSettled(within: .seconds(3600))
        }
        #expect(await early.value == false)
        #expect(await task.value == false)
    }

    @Test func aRefreshNotYetSentAtShutdownIsNotSentAndItsLeaseIsReleased() async throws {
        let scheduler = VirtualScheduler()
        let coordinator = SlowPublishCoordinator(scheduler: scheduler)
        // Another holder has the lease on generation 0: the queue's refresh waits behind it.
        let held = LockedValue<CredentialLease?>(nil)
        coordinator.acquire(replacing: 0) { grant in
            if case .success(.lease(let lease)) = grant { held.withLock { $0 = lease } }
        }
        let lease = try #require(held.withLock { $0 })
        let harness = Harness(
            scheduler: scheduler, coordinator: coordinator, lifetime: TokenLifetime(firstExpiresIn: .seconds(-1)))
        harness.submit("a")
        harness.run()
        harness.queue.shutdown()
        #expect(await harness.queue.refreshSettled(within: .seconds(5)) == true, "nothing was sent")
        coordinator.release(lease)  // the queue is granted the lease now, and gives it back unused
        harness.run()
        #expect(harness.server.refreshCalls == 0)
        #expect(coordinator.local.currentLease == nil, "the unused lease was released")
    }
}
