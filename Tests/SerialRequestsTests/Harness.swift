import SerialCore
import SerialRequests
import SerialTesting

/// How the simulated server's tokens expire, and what the queue's policy knows of it.
struct TokenLifetime {
    /// How long each token the server issues lasts.
    var lifetime: Duration = .seconds(60)
    /// When the first token (0) expires, from the harness's start; negative: before it (overnight).
    var firstExpiresIn: Duration = .seconds(60)
    var margin: Duration = .seconds(10)
    var retryInterval: Duration = .seconds(5)
    var retryJitter: Double = 0
    /// Whether the policy is told the expiry (false: the server's tokens expire, the queue learns
    /// it only from 401s, as without a lifetime).
    var known = true
}

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
        coordinator: (any CredentialCoordinator<Int>)? = nil,
        lifetime: TokenLifetime? = nil,
        server: SimulatedServer? = nil
    ) {
        self.scheduler = scheduler
        self.start = self.scheduler.now
        self.server = server ?? SimulatedServer(scheduler: self.scheduler)
        var policy = self.server.policy(cache: self.cache)
        if let lifetime {
            if server == nil { self.server.expireTokens(lifetime, from: self.start) }
            if lifetime.known { policy.lifetime = self.server.knownLifetime(lifetime) }
        }
        self.queue = TestQueue(
            transport: self.server, credential: 0, policy: policy,
            coordinator: coordinator, configuration: configuration, scheduler: self.scheduler)
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
