import SerialCore
import SerialCountdown
import SerialTesting
import Testing

/// CountdownManager's figures in the common `ServiceStatistics` shape, on virtual time.
@Suite("CountdownManager statistics")
struct CountdownStatisticsTests {
    static func outcomes(
        finished: Int = 0, stopped: Int = 0, cancelled: Int = 0, replaced: Int = 0, shutDown: Int = 0,
        receiverReleased: Int = 0
    ) -> [String: Int] {
        [
            "finished": finished, "stopped": stopped, "cancelled": cancelled, "replaced": replaced,
            "shutDown": shutDown, "receiverReleased": receiverReleased,
        ]
    }

    @Test func eachCountdownIsCountedOnceWhenRegisteredAndOnceByHowItEnded() {
        let fixture = CountdownFixture()
        let finishing = Receiver("finishing")
        let stopping = Receiver("stopping")
        let cancelled = Receiver("cancelled")
        let replaced = Receiver("replaced")
        let lasting = Receiver("lasting")
        fixture.register(finishing, for: .seconds(3))
        fixture.register(stopping, for: .seconds(10), stopWhen: { _ in true })
        fixture.register(cancelled, for: .seconds(10))
        fixture.register(replaced, for: .seconds(5))
        fixture.register(replaced, for: .seconds(10))  // a new item; the first ends replaced
        do {
            let released = Receiver("released")
            fixture.register(released, for: .seconds(10))
        }
        fixture.register(lasting, for: .seconds(100))
        var statistics = fixture.manager.serviceStatistics
        #expect(statistics.accepted == 7)
        #expect(statistics.outcomes == Self.outcomes(replaced: 1))

        fixture.tick()  // stopping stops; the released receiver's countdown is purged
        #expect(fixture.manager.cancel(cancelled))
        fixture.tick(2)  // finishing finishes
        statistics = fixture.manager.serviceStatistics
        #expect(
            statistics.outcomes
                == Self.outcomes(finished: 1, stopped: 1, cancelled: 1, replaced: 1, receiverReleased: 1))
        #expect(statistics.pending == 2)
        #expect(statistics.pending == fixture.manager.count)
        #expect(statistics.late == 0)
        #expect(statistics.wakeUps == 3)

        fixture.scheduler.shutdown()
        statistics = fixture.manager.serviceStatistics
        #expect(statistics.accepted == 7)
        #expect(
            statistics.outcomes
                == Self.outcomes(
                    finished: 1, stopped: 1, cancelled: 1, replaced: 1, shutDown: 2, receiverReleased: 1))
        #expect(statistics.pending == 0)
        #expect(statistics.accepted == statistics.pending + statistics.ended)
        withExtendedLifetime((finishing, stopping, cancelled, replaced, lasting)) {}
    }

    @Test func aCountdownThatFinishesMoreThanAnIntervalAfterItsDeadlineIsLate() {
        let fixture = CountdownFixture()
        let onTime = Receiver("onTime")
        let late = Receiver("late")
        fixture.register(onTime, for: .seconds(1))
        fixture.register(late, for: .seconds(2))
        fixture.tick()  // onTime finishes on its deadline
        fixture.clock.simulateSuspend(for: .seconds(10))
        fixture.tick()  // late finishes 10 s after its deadline
        let statistics = fixture.manager.serviceStatistics
        #expect(statistics.outcomes == Self.outcomes(finished: 2))
        #expect(statistics.late == 1)
        #expect(statistics.accepted == statistics.pending + statistics.ended)
        withExtendedLifetime((onTime, late)) {}
        fixture.tearDown()
    }
}
