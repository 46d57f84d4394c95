/// Every programmer-error trap of SerialExperimentalExecutors, with the words crash tests match.
enum ExperimentalMisuse {
    @inline(never)
    static func mainRunLoopNotIsolated() -> Never {
        fatalError("""
            MainRunLoopExecutor: checkIsolated failed: the caller is not on the thread running its run loop \
            (the main thread, once the runtime calls run()). Hop to the main actor first (await MainActor.run).
            """)
    }
}
