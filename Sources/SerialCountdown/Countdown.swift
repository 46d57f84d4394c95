@_spi(SerialSeam) import SerialCore
import Synchronization

/// A receiver usable as a countdown key: a class instance that may be handed to the callback
/// queue's thread.
typealias CountdownReceiver = AnyObject & Sendable

/// The type-erased handler of one registration.
typealias CountdownHandler = @Sendable (any CountdownReceiver, CountdownTick, inout Bool) -> Void

/// One `register` call: its handler and whether it may still be called.
///
/// A registration is *live* from `register` until it leaves the table (finished, stopped,
/// cancelled, replaced, receiver released). Leaving happens under the manager's lock; the flag
/// lets a tick that already collected it, outside the lock, skip a registration that was
/// cancelled or replaced meanwhile.
final class Registration: Sendable {
    let handler: CountdownHandler
    /// Called if the manager is deinitialized while this registration is still in its table, so
    /// adapters (the async sequence) can finish instead of waiting forever.
    let abandoned: (@Sendable () -> Void)?
    /// A hand-off: written under the manager's lock, read by a tick outside it (the seam).
    private let live = SeamAtomic<Bool>(true)

    init(handler: @escaping CountdownHandler, abandoned: (@Sendable () -> Void)? = nil) {
        self.handler = handler
        self.abandoned = abandoned
    }

    /// Whether the registration is still in the manager's table.
    var isLive: Bool { self.live.load(ordering: .acquiring) }

    /// Marks the registration as out of the table. Called under the manager's lock.
    func end() {
        self.live.store(false, ordering: .releasing)
    }
}

/// One countdown in the manager's table: the receiver, held weakly, and the deadline.
///
/// `key` is the receiver's `ObjectIdentifier` at registration. A key alone may later name a new
/// object at a reused address; the weak reference tells them apart (it reads `nil` once the
/// original receiver is gone, and a live object's address is never shared).
struct Slot {
    weak var receiver: (any CountdownReceiver)?
    let key: ObjectIdentifier
    /// Nanoseconds on the manager's clock.
    var deadline: Int64
    var registration: Registration

    init(receiver: any CountdownReceiver, deadline: Int64, registration: Registration) {
        self.receiver = receiver
        self.key = ObjectIdentifier(receiver)
        self.deadline = deadline
        self.registration = registration
    }

    /// A slot whose receiver is already gone, under `key` (test hook: address reuse on demand).
    init(releasedReceiverKey key: ObjectIdentifier, deadline: Int64, registration: Registration) {
        self.receiver = nil
        self.key = key
        self.deadline = deadline
        self.registration = registration
    }
}

/// One handler call a tick makes after leaving the lock. Holds the receiver weakly: a receiver
/// released by an earlier handler of the same tick gets no call ("no callback after release"
/// holds within a tick too). The call itself holds it strongly, for its duration only.
struct Delivery {
    weak var receiver: (any CountdownReceiver)?
    let key: ObjectIdentifier
    let registration: Registration
    /// Nanoseconds left, clamped at zero.
    let remaining: Int64
    let isFinal: Bool
}

/// Terminal calls handed to the scheduler together. Whoever claims the batch first makes them:
/// the scheduler's work, or the shutdown if the scheduler dropped that work — never both.
final class EndingBatch: Sendable {
    let number: UInt64
    let deliveries: [EndingDelivery]
    /// Who makes the calls, the scheduler's work or the shutdown, is decided here (the seam).
    private let taken = SeamAtomic<Bool>(false)

    init(number: UInt64, deliveries: [EndingDelivery]) {
        self.number = number
        self.deliveries = deliveries
    }

    /// `true` exactly once.
    func claim() -> Bool {
        !self.taken.exchange(true, ordering: .acquiringAndReleasing)
    }
}

/// A terminal call made outside a tick (cancelled, replaced, shut down). The receiver is held
/// weakly: a receiver released before the call is made gets no call.
struct EndingDelivery {
    weak var receiver: (any CountdownReceiver)?
    let registration: Registration
    let remaining: Int64
    let end: CountdownEnd
}
