#if Metrics  // compiled only with the package trait Metrics (see Package.swift)
import CoreMetrics
import SerialCore
import SerialRuntime

/// Exports `SerialQueue.statistics` and any service figure as swift-metrics counters, gauges
/// and timers, with the queue's label as the `queue` dimension.
///
/// ```swift
/// let reporter = SerialMetricsReporter()      // MetricsSystem's factory
/// reporter.watch(db)
/// reporter.addGauge("serial_timers_pending", dimensions: [("service", "timeouts")]) {
///     Double(timers.pendingCount)
/// }
/// reporter.start(every: .seconds(10), on: db)  // or call update() yourself
/// ```
///
/// Per watched queue, on each `update()`:
/// - counters `serial_queue_submitted_total`, `serial_queue_executed_total`,
///   `serial_queue_dropped_total`, `serial_queue_sync_waits_total` grow by what happened since
///   the last update;
/// - gauges `serial_queue_depth`, `serial_queue_high_water_depth`, and
///   `serial_queue_wait_p99_seconds` (the wait histogram's p99, an upper bound per bucket);
/// - timer `serial_queue_batch_wait` records the mean wait of the timed batches started since
///   the last update (a queue times one wait in eight: `QueueStatistics`, "Wait time"; the
///   histogram itself stays in the queue).
///
/// Per watched service (`watch(service:name:)`), with dimension `service`: counters
/// `serial_service_accepted_total`, `serial_service_outcomes_total` (dimension `outcome` too),
/// `serial_service_late_total`, `serial_service_wakeups_total` grow by what happened since the
/// last update; gauge `serial_service_pending`.
///
/// **Threads.** Every method may be called from any thread. `update()` reads each queue's
/// figures under that queue's lock, one at a time; metric handlers are called outside it.
public final class SerialMetricsReporter: Sendable {
    private struct QueueMetrics {
        weak var queue: SerialQueue?
        let submitted: Counter
        let executed: Counter
        let dropped: Counter
        let syncWaits: Counter
        let depth: Gauge
        let highWater: Gauge
        let waitP99: Gauge
        let batchWait: CoreMetrics.Timer
        var last = QueueStatistics()
    }

    private struct GaugeSource {
        let gauge: Gauge
        let read: @Sendable () -> Double
    }

    /// One watched service's metrics; outcome counters are made as their kinds first appear.
    private final class ServiceMetrics: Sendable {
        weak let service: (any ServiceStatisticsReporting)?
        let name: String
        let accepted: Counter
        let late: Counter
        let wakeUps: Counter
        let pending: Gauge
        let progress = LockedValue<(last: ServiceStatistics, outcomes: [String: Counter])>(
            (ServiceStatistics(accepted: 0, pending: 0, outcomes: [:]), [:]))

        init(service: any ServiceStatisticsReporting, name: String, factory: any MetricsFactory) {
            self.service = service
            self.name = name
            let dimensions = [("service", name)]
            self.accepted = Counter(label: "serial_service_accepted_total", dimensions: dimensions, factory: factory)
            self.late = Counter(label: "serial_service_late_total", dimensions: dimensions, factory: factory)
            self.wakeUps = Counter(label: "serial_service_wakeups_total", dimensions: dimensions, factory: factory)
            self.pending = Gauge(label: "serial_service_pending", dimensions: dimensions, factory: factory)
        }

        /// Exports what changed since the last call; one caller at a time (under `progress`).
        func update(factory: any MetricsFactory) {
            guard let service = self.service else { return }
            let now = service.serviceStatistics
            self.progress.withLock { progress in
                let last = progress.last
                self.accepted.increment(by: now.accepted - last.accepted)
                self.late.increment(by: now.late - last.late)
                self.wakeUps.increment(by: now.wakeUps - last.wakeUps)
                self.pending.record(now.pending)
                for (kind, count) in now.outcomes {
                    let delta = count - (last.outcomes[kind] ?? 0)
                    if progress.outcomes[kind] == nil {
                        progress.outcomes[kind] = Counter(
                            label: "serial_service_outcomes_total", dimensions: [("service", self.name), ("outcome", kind)],
                            factory: factory)
                    }
                    if delta > 0 { progress.outcomes[kind]!.increment(by: delta) }
                }
                progress.last = now
            }
        }
    }

    private struct State {
        var services: [ServiceMetrics] = []
        var queues: [QueueMetrics] = []
        var gauges: [GaugeSource] = []
        var periodic: DelayedWork? = nil
        var isStopped = false
    }

    private let factory: any MetricsFactory
    private let state = LockedValue(State())

    /// A reporter whose metrics come from `factory` (by default, the bootstrapped MetricsSystem's).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// Exports `queue`'s figures from now on (held weakly: a released queue stops being exported).
    public func watch(_ queue: SerialQueue) {
        let dimensions = [("queue", queue.label)]
        let metrics = QueueMetrics(
            queue: queue,
            submitted: Counter(label: "serial_queue_submitted_total", dimensions: dimensions, factory: self.factory),
            executed: Counter(label: "serial_queue_executed_total", dimensions: dimensions, factory: self.factory),
            dropped: Counter(label: "serial_queue_dropped_total", dimensions: dimensions, factory: self.factory),
            syncWaits: Counter(label: "serial_queue_sync_waits_total", dimensions: dimensions, factory: self.factory),
            depth: Gauge(label: "serial_queue_depth", dimensions: dimensions, factory: self.factory),
            highWater: Gauge(label: "serial_queue_high_water_depth", dimensions: dimensions, factory: self.factory),
            waitP99: Gauge(label: "serial_queue_wait_p99_seconds", dimensions: dimensions, factory: self.factory),
            batchWait: CoreMetrics.Timer(label: "serial_queue_batch_wait", dimensions: dimensions, factory: self.factory))
        self.state.withLock { $0.queues.append(metrics) }
    }

    /// Exports `service`'s `ServiceStatistics` from now on, with dimension `service` = `name`
    /// (held weakly: a released service stops being exported).
    public func watch(service: any ServiceStatisticsReporting, name: String) {
        let metrics = ServiceMetrics(service: service, name: name, factory: self.factory)
        self.state.withLock { $0.services.append(metrics) }
    }

    /// Exports the value `read` returns as gauge `label` on each update: the way in for a
    /// service's figures (`TimerService.pendingCount`, `RequestQueue` statistics, …).
    public func addGauge(
        _ label: String, dimensions: [(String, String)] = [], read: @escaping @Sendable () -> Double
    ) {
        let gauge = Gauge(label: label, dimensions: dimensions, factory: self.factory)
        self.state.withLock { $0.gauges.append(GaugeSource(gauge: gauge, read: read)) }
    }

    /// Reads every watched queue, service and gauge source once and exports the figures.
    public func update() {
        let (queues, gauges, services) = self.state.withLock { state in
            state.queues.removeAll { $0.queue == nil }
            state.services.removeAll { $0.service == nil }
            return (state.queues, state.gauges, state.services)
        }
        for metrics in services { metrics.update(factory: self.factory) }
        var updated: [ObjectIdentifier: QueueStatistics] = [:]
        for metrics in queues {
            guard let queue = metrics.queue else { continue }
            let now = queue.statistics
            let last = metrics.last
            metrics.submitted.increment(by: now.submitted - last.submitted)
            metrics.executed.increment(by: now.executed - last.executed)
            metrics.dropped.increment(by: now.dropped - last.dropped)
            metrics.syncWaits.increment(by: now.syncWaits - last.syncWaits)
            metrics.depth.record(now.depth)
            metrics.highWater.record(now.highWaterDepth)
            metrics.waitP99.record(Self.seconds(now.waitTime.p99))
            let batches = now.waitTime.count - last.waitTime.count
            if batches > 0 {
                let nanoseconds = now.waitTime.totalNanoseconds &- last.waitTime.totalNanoseconds
                metrics.batchWait.recordNanoseconds(Int64(clamping: nanoseconds / UInt64(batches)))
            }
            updated[ObjectIdentifier(queue)] = now
        }
        for source in gauges { source.gauge.record(source.read()) }
        self.state.withLock { state in
            for index in state.queues.indices {
                guard let queue = state.queues[index].queue, let now = updated[ObjectIdentifier(queue)] else { continue }
                state.queues[index].last = now
            }
        }
    }

    /// Calls `update()` every `interval` on `queue` until `stop()` (or until the queue shuts down).
    public func start(every interval: Duration, on queue: SerialQueue) {
        self.schedule(after: interval, on: queue)
    }

    /// Stops periodic updates.
    public func stop() {
        let periodic = self.state.withLock { state in
            state.isStopped = true
            defer { state.periodic = nil }
            return state.periodic
        }
        periodic?.cancel()
    }

    private func schedule(after interval: Duration, on queue: SerialQueue) {
        // A queue that shut down ends the updates; there is nothing left to report on it.
        let work = try? queue.schedule(after: interval) { [weak self, weak queue] in
            guard let self, let queue else { return }
            self.update()
            self.schedule(after: interval, on: queue)
        }
        let keep = self.state.withLock { state in
            guard !state.isStopped else { return false }
            state.periodic = work
            return true
        }
        if !keep { work?.cancel() }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
#endif  // Metrics
