#if SERIAL_SIMULATION
import Glibc

/// Bounds and settings of one simulated run.
package struct SimulationLimits: Sendable {
    /// A run with more scheduling points fails (a livelock, or a scenario too big).
    package var maximumSteps = 200_000
    /// Virtual time each clock read adds: a 20 µs spin window ends after 20 reads at 1 µs.
    package var clockQuantumNanoseconds: UInt64 = 1_000
    /// A run in which no thread reaches the seam for this long (real time) fails as stuck.
    package var stallSeconds = 30
    /// Virtual time at the start: far from zero, so `now - delay` stays positive.
    package var startNanoseconds: UInt64 = 1_000_000_000_000
    /// Whether the run keeps each scheduling point's trace hash (`SimulationOutcome.stepMarks`).
    package var recordsSteps = false

    package init() {}
}

/// Why a simulated run failed, at which step, and the token that replays it.
package struct SimulationFailure: Sendable {
    package enum Kind: String, Sendable {
        case check = "failed check"
        case invariant
        case deadlock
        case stepLimit = "step limit"
        case stuck
        case replayDiverged = "replay diverged"
        /// A job of one of an async run's tasks enqueued from a thread outside the run.
        case escaped = "escaped job"
        /// A hot property still hot past its step bound, or when the run ended.
        case liveness
        /// The same seed, run again, took another path (`SimulationFailure.message` names the step).
        case nondeterministic
    }

    package let kind: Kind
    package let message: String
    package let step: Int
    /// The whole run's choices: replaying them reaches this failure again.
    package let token: ScheduleToken

    package init(kind: Kind, message: String, step: Int, token: ScheduleToken) {
        self.kind = kind
        self.message = message
        self.step = step
        self.token = token
    }

    /// The one line that names the failure, its seed and strategy, and how to replay it.
    package var line: String {
        "simulation failed (\(self.kind.rawValue)) at step \(self.step) (seed \(self.token.seed), strategy "
            + "\(self.token.strategy.name)); replay: \(self.token)"
    }
}

/// What one simulated run did.
package struct SimulationOutcome: Sendable {
    package var failure: SimulationFailure?
    /// The whole run's choices (also when it passed).
    package let token: ScheduleToken
    package let steps: Int
    package let threads: Int
    /// FNV-1a over every decision and seam event: equal on a faithful replay.
    package let traceHash: UInt64
    package let virtualNanoseconds: UInt64
    /// Each scheduling point's trace hash and thread, when the run recorded them.
    package var stepMarks: [SimulationStepMark] = []
}

/// Runs scenarios under the simulator.
package enum SimulationRun {
    /// Held by the controlling thread for the whole of a run (never by a simulated thread).
    private static let oneAtATime = LockedValue(())

    /// Whether the calling thread is a simulated thread of a running simulation.
    package static var isSimulatedThread: Bool { SimulatedThread.current != nil }

    /// Runs `scenario` on a new simulated thread ("main") and every thread it starts through the
    /// seam, one at a time, chosen by `scheduler`; returns when no simulated thread is left or the
    /// run fails. Blocks the calling thread meanwhile (a real wait, checked every second).
    ///
    /// - Precondition: Not called from a simulated thread.
    package static func execute(
        _ scheduler: SimulationScheduler, limits: SimulationLimits = SimulationLimits(),
        _ scenario: @escaping () -> Void
    ) -> SimulationOutcome {
        if SimulatedThread.current != nil {
            fatalError("SerialTesting simulation: a run was started from inside a simulated run; nest scenarios "
                + "as plain function calls instead")
        }
        SimulationTrapLine.install()
        // One run at a time in a process: objects shared by every run (global locks such as the
        // wait graph's) carry one run's ids at a time, and two runs would only share two cores.
        return Self.oneAtATime.withLock { _ in Self.executeAlone(scheduler, limits: limits, scenario) }
    }

    /// Runs the async `scenario` as the root task of a run (`SimulationTasks`): on a pool of
    /// `taskThreads` simulated threads, with the Concurrency runtime's global-executor hooks
    /// routing every other job of the run to them while it lasts.
    ///
    /// - Precondition: Not called from a simulated thread.
    package static func execute(
        _ scheduler: SimulationScheduler, limits: SimulationLimits = SimulationLimits(), taskThreads: Int,
        _ scenario: @escaping @Sendable () async -> Void
    ) -> SimulationOutcome {
        if SimulatedThread.current != nil {
            fatalError("SerialTesting simulation: a run was started from inside a simulated run; nest scenarios "
                + "as plain function calls instead")
        }
        SimulationTrapLine.install()
        return Self.oneAtATime.withLock { _ in
            SimulationDefaultExecutor.installOnce()
            SimulationTaskHooks.install()
            defer {
                SimulationTasks.endRouting()
                SimulationTaskHooks.uninstall()
            }
            return Self.executeAlone(scheduler, limits: limits) {
                SimulationTasks.runScenario(threads: taskThreads, scenario)
            }
        }
    }

    private static func executeAlone(
        _ scheduler: SimulationScheduler, limits: SimulationLimits, _ scenario: @escaping () -> Void
    ) -> SimulationOutcome {
        let kernel = SimulationKernel(scheduler: scheduler, limits: limits)
        let (main, body) = kernel.register(name: "main", body: scenario)
        let start = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var handle = pthread_t()
        let rc = pthread_create(&handle, nil, { argument in
            Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue().run()
            return nil
        }, start)
        if rc != 0 { fatalError("SerialTesting simulation: pthread_create failed with error \(rc)") }
        checkPthread(pthread_detach(handle), "pthread_detach")
        kernel.started(main, handle: handle, by: nil)

        kernel.enter()
        kernel.running = main.id
        main.giveBaton()
        var lastSteps = -1
        var quietSeconds = 0
        while kernel.status == .running {
            var deadline = timespec()
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            deadline.tv_sec += 1
            _ = pthread_cond_timedwait(kernel.ended, kernel.lock, &deadline)
            guard kernel.status == .running else { break }
            let steps = kernel.scheduler.steps
            quietSeconds = steps == lastSteps ? quietSeconds + 1 : 0
            lastSteps = steps
            if quietSeconds >= limits.stallSeconds {
                let title = kernel.running.map { kernel.threads[$0].title } ?? "no thread"
                kernel.end(.stuck, "\(title) ran \(quietSeconds) s without reaching a seam operation (a loop "
                    + "that reads no clock and takes no lock, or a blocking call outside the seam)")
            }
        }
        if let later = kernel.failure, later.kind != .replayDiverged, !kernel.scheduler.replayedWholly {
            // The run left its record, or failed before its end: whatever failed is not the
            // recorded failure, so the replay says it diverged (and what happened after).
            let divergence = kernel.scheduler.divergence ?? "the run failed before its record ended"
            kernel.failure = nil
            kernel.recordFailure(
                .replayDiverged, "\(divergence) (then: \(later.kind.rawValue) at step \(later.step): \(later.message))")
        } else if kernel.status == .completed && !kernel.scheduler.replayedWholly {
            kernel.recordFailure(.replayDiverged, kernel.scheduler.divergence ?? "the run ended before its record did")
        }
        let token = kernel.scheduler.token
        let failure = kernel.failure.map {
            SimulationFailure(kind: $0.kind, message: $0.message, step: $0.step, token: token)
        }
        let outcome = SimulationOutcome(
            failure: failure, token: token, steps: kernel.scheduler.steps,
            threads: kernel.threads.count, traceHash: kernel.traceHash,
            virtualNanoseconds: kernel.now - limits.startNanoseconds, stepMarks: kernel.stepMarks)
        if kernel.status == .completed {
            // Every thread has finished: drop the records (each also keeps the kernel alive).
            kernel.threads.removeAll()
        }
        kernel.leave()
        return outcome
    }

    /// The value of environment variable `name` (how a replay token reaches a test run).
    package static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Writes `text` to standard error at once (failure reports must not wait in a buffer).
    package static func writeToStandardError(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }

    /// Records a failed expectation in the calling simulated thread's run; `false` when the
    /// caller is not a simulated thread (nothing recorded).
    package static func recordCheckFailure(_ message: String) -> Bool {
        guard let thread = SimulatedThread.current else { return false }
        thread.kernel.check(failedWith: message, by: thread)
        return true
    }
}

private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
#endif
