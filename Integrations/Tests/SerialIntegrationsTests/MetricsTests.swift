import MetricsTestKit
import SerialMetrics
import SerialRuntime
import Testing

@Suite("swift-metrics integration")
struct MetricsTests {
    @Test func queueFiguresMoveAsWorkRuns() throws {
        let metrics = TestMetrics()
        let reporter = SerialMetricsReporter(factory: metrics)
        let queue = SerialQueue(label: "exported")
        reporter.watch(queue)
        reporter.update()
        let dimensions = [("queue", "exported")]
        #expect(try metrics.expectCounter("serial_queue_submitted_total", dimensions).totalValue == 0)

        queue.suspend()
        for _ in 0..<25 { queue.async {} }
        reporter.update()
        #expect(try metrics.expectCounter("serial_queue_submitted_total", dimensions).totalValue == 25)
        #expect(try metrics.expectCounter("serial_queue_executed_total", dimensions).totalValue == 0)
        #expect(try metrics.expectGauge("serial_queue_depth", dimensions).lastValue == 25)

        queue.resume()
        queue.sync {}
        reporter.update()
        let figures = queue.statistics
        #expect(try metrics.expectCounter("serial_queue_submitted_total", dimensions).totalValue == Int64(figures.submitted))
        #expect(try metrics.expectCounter("serial_queue_executed_total", dimensions).totalValue == Int64(figures.executed))
        #expect(try metrics.expectGauge("serial_queue_depth", dimensions).lastValue == 0)
        #expect(try metrics.expectGauge("serial_queue_high_water_depth", dimensions).lastValue ?? 0 >= 25)
        #expect(try metrics.expectTimer("serial_queue_batch_wait", dimensions).values.count >= 1)
    }

    @Test func aServiceFigureIsExportedThroughAGauge() throws {
        let metrics = TestMetrics()
        let reporter = SerialMetricsReporter(factory: metrics)
        let queue = SerialQueue(label: "timers")
        let timers = TimerService(scheduler: queue)
        reporter.addGauge("serial_timers_pending", dimensions: [("service", "timers")]) { Double(timers.pendingCount) }
        for _ in 0..<4 { _ = try timers.schedule(after: .seconds(3_600)) {} }
        reporter.update()
        #expect(try metrics.expectGauge("serial_timers_pending", [("service", "timers")]).lastValue == 4)
        timers.stop()
        reporter.update()
        #expect(try metrics.expectGauge("serial_timers_pending", [("service", "timers")]).lastValue == 0)
    }

    @Test func aServicesCommonFiguresAreExportedByDelta() throws {
        let metrics = TestMetrics()
        let reporter = SerialMetricsReporter(factory: metrics)
        let queue = SerialQueue(label: "timers")
        let timers = TimerService(scheduler: queue)
        reporter.watch(service: timers, name: "timers")
        let service = [("service", "timers")]
        func outcome(_ kind: String) throws -> Int64 {
            try metrics.expectCounter("serial_service_outcomes_total", [("service", "timers"), ("outcome", kind)])
                .totalValue
        }
        var handles: [TimerHandle] = []
        for _ in 0..<4 { handles.append(try timers.schedule(after: .seconds(3_600)) {}) }
        #expect(handles[0].cancel())
        reporter.update()
        #expect(try metrics.expectCounter("serial_service_accepted_total", service).totalValue == 4)
        #expect(try metrics.expectGauge("serial_service_pending", service).lastValue == 3)
        #expect(try outcome("cancelled") == 1)
        #expect(try outcome("stopped") == 0)

        timers.stop()
        reporter.update()
        reporter.update()  // nothing new: the counters do not grow again
        #expect(try metrics.expectCounter("serial_service_accepted_total", service).totalValue == 4)
        #expect(try metrics.expectGauge("serial_service_pending", service).lastValue == 0)
        #expect(try outcome("cancelled") == 1)
        #expect(try outcome("stopped") == 3)
        #expect(try metrics.expectCounter("serial_service_late_total", service).totalValue == 0)
        #expect(try metrics.expectCounter("serial_service_wakeups_total", service).totalValue == Int64(timers.wakeUpCount))
    }
}
