/// A handler registered with `Scheduling.whenShutDown`; `cancel()` withdraws it.
public final class ShutdownSubscription: Sendable {
    private let withdraw: LockedValue<(@Sendable () -> Void)?>

    /// A subscription that `cancel()` withdraws by calling `withdraw` once (for conformers of
    /// `Scheduling` outside this package; pass `{}` when the handler has already run).
    public init(withdraw: @escaping @Sendable () -> Void) {
        self.withdraw = LockedValue(withdraw)
    }

    /// Withdraws the handler if it has not started; later calls do nothing.
    ///
    /// - Complexity: O(1).
    public func cancel() {
        let withdraw = self.withdraw.withLock { value in
            defer { value = nil }
            return value
        }
        withdraw?()
    }
}

/// The handlers waiting for a scheduler's shutdown, as a plain value kept under the
/// scheduler's own lock. Each handler is taken exactly once: by `takeAll` or by `remove`.
package struct ShutdownHandlers {
    package typealias Handler = @Sendable (SchedulingError) -> Void

    private var handlers: [UInt64: Handler] = [:]
    private var nextID: UInt64 = 0
    /// Whether `takeAll` ran: from then on handlers run at once instead of waiting.
    package private(set) var isFired = false

    package init() {}

    /// Keeps `handler` for the shutdown; `nil` when the shutdown has already happened (the
    /// caller runs it at once).
    package mutating func add(_ handler: @escaping Handler) -> UInt64? {
        guard !self.isFired else { return nil }
        self.nextID &+= 1
        self.handlers[self.nextID] = handler
        return self.nextID
    }

    /// Withdraws a handler; releases it outside the caller's lock through the returned value.
    package mutating func remove(_ id: UInt64) -> Handler? {
        self.handlers.removeValue(forKey: id)
    }

    /// Takes every handler, in registration order, and marks the shutdown as happened.
    package mutating func takeAll() -> [Handler] {
        self.isFired = true
        defer { self.handlers = [:] }
        return self.handlers.sorted { $0.key < $1.key }.map(\.value)
    }
}
