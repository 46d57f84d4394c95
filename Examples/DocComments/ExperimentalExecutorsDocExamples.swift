import SerialExperimentalExecutors
import Testing

// The example of WheelTaskExecutor (its doc comment, the module's article and the README), an
// `// example:` region that scripts/check-readme-examples.sh compares with them.

@Suite("Doc examples: experimental executors")
struct ExperimentalExecutorsDocExamples {
    @Test func wheelTaskExecutor() async {
        // example: WheelTaskExecutor
        let executor = WheelTaskExecutor(threads: 2, label: "app")
        let woke = await Task(executorPreference: executor) {
            try? await Task.sleep(for: .milliseconds(5))   // a timer on the executor's wheel, no Dispatch
            return true
        }.value
        // end example
        #expect(woke)
        #expect(executor.timers.wakeUpCount > 0, "the sleep did not wait on the executor's wheel")
        executor.shutdown()
    }
}
