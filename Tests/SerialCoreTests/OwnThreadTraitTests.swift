import SerialTestSupport
import Testing

/// The test suites' own tool: `.onItsOwnThread` keeps CPU-heavy tests off Swift concurrency's
/// cooperative threads. Checked by the thread's name, which a cooperative thread never has.
@Suite("The own-thread trait", .onItsOwnThread, .disabled(if: Sanitizers.threadSanitizerIsActive, "the trait stands aside under ThreadSanitizer"))
struct OwnThreadTraitTests {
    @Test func aSynchronousTestRunsOnAThreadOfItsOwn() {
        #expect(currentThreadName() == "own-thread")
    }

    @Test(arguments: [1, 2]) func eachCaseOfAParameterizedTestRunsOnAThreadOfItsOwn(case: Int) {
        #expect(currentThreadName() == "own-thread", "case \(`case`)")
    }

    @Test func anAsyncTestRunsThereBetweenItsSuspensions() async {
        await Task.yield()
        #expect(currentThreadName() == "own-thread")
    }
}
