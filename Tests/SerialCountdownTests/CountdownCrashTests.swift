import SerialCore
import SerialCountdown
import SerialTesting
import SerialTestSupport
import Testing

@Suite struct CountdownCrashTests {
    @Test func zeroIntervalTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = CountdownManager(interval: .zero, queue: VirtualScheduler())
        }
        let message = result?.standardErrorText ?? ""
        #expect(message.contains("tick interval 0.0 seconds is not positive"))
    }

    @Test func negativeIntervalTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = CountdownManager(interval: .milliseconds(-5), queue: VirtualScheduler())
        }
        let message = result?.standardErrorText ?? ""
        #expect(message.contains("Pass a duration greater than zero"))
    }

    @Test func simulatingANegativeSuspendTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            VirtualBootClock(following: VirtualScheduler()).simulateSuspend(for: .seconds(-1))
        }
        let message = result?.standardErrorText ?? ""
        #expect(message.contains("a boot clock never goes back"))
    }
}
