import SerialRuntime

/// This library's `TimerService` on its own `SerialQueue` (default tick of 1 ms).
struct SerialTimerPeer: TimerPeer {
    static let column = Column.serial
    let queue: SerialQueue
    let service: TimerService

    init(label: String) {
        self.queue = SerialQueue(label: label)
        self.service = TimerService(scheduler: self.queue)
    }

    @inline(__always)
    func schedule(afterNanoseconds nanoseconds: Int64, _ work: @escaping @Sendable () -> Void) -> TimerHandle {
        do {
            return try self.service.schedule(after: .nanoseconds(nanoseconds), work)
        } catch {
            fatalError("compare: TimerService refused a timer: \(error)")
        }
    }

    /// `tolerance: .zero` is precise; a tolerance lets overlapping windows share a wake-up.
    func schedule(afterNanoseconds nanoseconds: Int64, tolerance: Int64?, _ work: @escaping @Sendable () -> Void) {
        do {
            try self.service.schedule(after: .nanoseconds(nanoseconds), tolerance: .nanoseconds(tolerance ?? 0), work)
        } catch {
            fatalError("compare: TimerService refused a timer: \(error)")
        }
    }

    @inline(__always)
    func cancel(_ handle: TimerHandle) {
        _ = handle.cancel()
    }

    func execute(_ work: @escaping @Sendable () -> Void) {
        self.queue.async(work)
    }

    func close() {
        self.service.stop()
        self.queue.shutdown(.drain)
    }
}

