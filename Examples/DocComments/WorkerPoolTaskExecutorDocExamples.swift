import SerialRuntime
import Testing

// The example of WorkerPool's TaskExecutor conformance, an `// example:` region that
// scripts/check-readme-examples.sh compares with the doc comment.

@Suite("Doc examples: WorkerPool as a TaskExecutor")
struct WorkerPoolTaskExecutorDocExamples {
    @Test func taskExecutor() async {
        // example: WorkerPool as a TaskExecutor
        let pool = WorkerPool(threads: 4)
        let sum = await withTaskExecutorPreference(pool) {
            await withTaskGroup(of: Int.self) { group in
                for index in 0..<100 { group.addTask { index } }   // child tasks run on the pool too
                return await group.reduce(0, +)
            }
        }
        // end example
        #expect(sum == 4950)
        pool.shutdown()
    }
}
