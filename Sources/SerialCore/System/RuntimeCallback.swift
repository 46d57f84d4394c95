/// Calls the Swift runtime makes into this library, which it may make while it holds a lock of
/// its own: an executor's `enqueue` (cancelling a task that sleeps, or a group's children,
/// enqueues their jobs under the task's status record lock), and every `onCancel` handler of
/// `withTaskCancellationHandler` (run under that same lock) in this library's modules.
package enum RuntimeCallback {
    /// Runs `body`, an executor's answer to the runtime.
    ///
    /// Seam: a simulated thread keeps the baton through `body` (its seam operations there are not
    /// scheduling points, and while it waits for a mutex only the mutex's owner runs). Otherwise
    /// the scheduler could run a thread that then blocks on the runtime's lock, outside the seam,
    /// for good (seen as runs ended `stuck`: a `cancelAll()` enqueueing a sleeping child, and that
    /// child's thread blocked in `removeStatusRecord`).
    @inline(__always)
    package static func run<T>(_ body: () throws -> T) rethrows -> T {
        #if SERIAL_SIMULATION
        if let thread = SimulatedThread.current {
            thread.kernel.enter()
            thread.kernel.runtimeCallback(true, by: thread)
            thread.kernel.leave()
            defer {
                thread.kernel.enter()
                thread.kernel.runtimeCallback(false, by: thread)
                thread.kernel.leave()
            }
            return try body()
        }
        #endif
        return try body()
    }
}
