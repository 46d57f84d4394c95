import SerialCore
import SerialRequests
import SerialTesting

/// A queue on virtual time against a simulated server, with a recorder for what came back.
struct Harness {
    let scheduler: VirtualScheduler
    let server: SimulatedServer
    let cache = ResponseCacheBox()
    let recorder = Recorder()
    let queue: TestQueue
    let start: MonotonicInstant

    init(
        _ configuration: TestQueue.Configuration = TestQueue.Configuration(agingInterval: nil),
        scheduler: VirtualScheduler = VirtualScheduler(),
        coordinator: (any CredentialCoordinator<Int>)? = nil
    ) {
        self.scheduler = scheduler
        self.server = SimulatedServer(scheduler: self.scheduler)
        self.queue = TestQueue(
            transport: self.server, credential: 0, policy: self.server.policy(cache: self.cache),
            coordinator: coordinator, configuration: configuration, scheduler: self.scheduler)
        self.start = self.scheduler.now
    }

    /// Submits a call tagged `tag` whose completion and states go to the recorder.
    @discardableResult
    func submit(
        _ tag: String, statuses: [Int] = [200], latency: Duration = .milliseconds(10),
        priority: RequestPriority = .default, kind: RequestKind? = nil, timeout: Duration? = nil
    ) -> RequestHandle {
        self.queue.submit(
            Call(name: tag, statuses: statuses, latency: latency), priority: priority, kind: kind, timeout: timeout,
            onStateChange: self.recorder.observer(tag), completion: self.recorder.completion(tag))
    }

    /// Runs what is due now.
    func run() { self.scheduler.runUntilIdle() }

    /// Moves virtual time by `duration`, running what falls due.
    func advance(_ duration: Duration) { self.scheduler.advance(by: duration) }

    /// Virtual time since the harness was made.
    var elapsed: Duration { self.start.duration(to: self.scheduler.now) }

    /// When each send of `name` happened, relative to the start.
    func sendTimes(_ name: String) -> [Duration] {
        self.server.sends.filter { $0.name == name }.map { self.start.duration(to: $0.at) }
    }
}
