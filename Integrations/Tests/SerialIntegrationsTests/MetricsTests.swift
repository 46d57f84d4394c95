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
}
