import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

/// Three RequestQueues on their own SerialQueues share one LocalCredentialCoordinator (three
/// replicas of one client in a process), against a server that rotates its token on each refresh
/// and counts a refresh of a superseded token as reuse; submitters on six threads and an expirer
/// race them. Every request completes exactly once, and no refresh ever presents a superseded
/// token. Seeded (STRESS_SEED), bounded (STRESS_SCALE), every wait with a timeout.
@Suite("Coordinated refresh stress on real queues")
struct CoordinatedRefreshStressTests {
    @Test func queuesSharingACoordinatorNeverRefreshTheSameTokenTwice() async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let queues = 3
            let perThread = StressConfiguration.iterations(300)
            let total = queues * 2 * perThread
            let server = RotatingServer()
            let scheduler = SerialQueue(label: "coordinator")
            let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: .seconds(5))
            let replicas = (0..<queues).map { index in
                RequestQueue(
                    transport: server, credential: 0, policy: server.policy, coordinator: coordinator,
                    configuration: .init(
                        maximumConcurrent: 8, maximumRedirects: 20, refreshLimit: 10_000, refreshWindow: .seconds(1),
                        refreshTimeout: .seconds(5), agingInterval: nil),
                    scheduler: SerialQueue(label: "replica-\(index)"))
            }
            let counts = LockedValue([UInt8](repeating: 0, count: total))  // pthread: visible to TSan
            let completed = Atomic<Int>(0)
            let allDone = TestSemaphore()
            let submitting = Atomic<Int>(queues * 2)
            runThreads(queues * 2 + 1) { thread in
                var random = SeededRandom(seed: seed &+ UInt64(thread) &* 0x9E37)
                if thread == queues * 2 {
                    while submitting.load(ordering: .acquiring) > 0 {
                        server.expire()
                        sleepMicroseconds(200 + Int(random.next() % 2000))
                    }
                    return
                }
                for step in 0..<perThread {
                    let index = thread * perThread + step
                    replicas[thread % queues].submit(index) { _ in
                        counts.withLock { $0[index] &+= 1 }
                        if completed.add(1, ordering: .acquiringAndReleasing).newValue == total { allDone.signal() }
                    }
                    if random.next() % 8 == 0 { sleepMicroseconds(Int(random.next() % 300)) }
                }
                submitting.subtract(1, ordering: .releasing)
            }
            let finished = allDone.wait(timeout: .seconds(60))
            #expect(finished, "seed \(seed): \(completed.load(ordering: .acquiring)) of \(total) within 60 s")
            let wrong = counts.withLock { counts in counts.enumerated().filter { $0.element != 1 }.prefix(10).map(\.offset) }
            #expect(wrong.isEmpty, "seed \(seed): completions not exactly once for \(wrong)")
            #expect(server.reuses == 0, "seed \(seed): \(server.reuses) refreshes presented a superseded token")
            let adopted = replicas.reduce(0) { $0 + $1.statistics.credentialsAdopted }
            #expect(server.refreshes > 0 && adopted > 0, "seed \(seed): the race did not happen (\(server.refreshes) refreshes)")
            for replica in replicas { replica.shutdown() }
        }
    }
}

private func sleepMicroseconds(_ microseconds: Int) {
    var time = timespec(tv_sec: 0, tv_nsec: microseconds * 1000)
    nanosleep(&time, nil)
}

/// Answers from a SerialQueue of its own: 200 for the current token, else 401. A refresh of the
/// newest token issued rotates it; a refresh of an older one is counted as reuse (and answered,
/// so that the run goes on).
private final class RotatingServer: RequestTransport, Sendable {
    typealias Request = Int
    typealias Response = Int
    typealias Credential = Int

    let answers = SerialQueue(label: "rotating-server")
    let state = LockedValue((valid: 0, newest: 0, refreshes: 0, reuses: 0))  // pthread: visible to TSan

    func send(_ request: Int, credential: Int, completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        self.answers.asyncAfter(delay: .microseconds(request % 500)) {
            completion(.success(self.state.withLock { $0.valid } == credential ? 200 : 401))
        }
    }

    func expire() { self.state.withLock { $0.valid = -1 } }

    var reuses: Int { self.state.withLock { $0.reuses } }
    var refreshes: Int { self.state.withLock { $0.refreshes } }

    var policy: RequestQueue<RotatingServer>.Policy {
        .init(
            classify: { _, outcome in (try? outcome.get()) == 200 ? .success : .credentialExpired },
            refresh: { expired, completion in
                self.answers.asyncAfter(delay: .microseconds(300)) {
                    let token = self.state.withLock { state in
                        state.refreshes += 1
                        if expired != state.newest { state.reuses += 1 }
                        state.newest += 1
                        state.valid = state.newest
                        return state.newest
                    }
                    completion(.success(token))
                }
            })
    }
}
