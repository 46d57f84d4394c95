@_spi(SerialSeam) import SerialCore
import Synchronization

/// Identifies a submitted request; ids grow in submission order.
public struct RequestID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The submission number, starting at 1 for each queue.
    public let rawValue: UInt64

    package init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// Submission order: a lower id was submitted earlier.
    public static func < (lhs: RequestID, rhs: RequestID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `#` and the number, for logs.
    public var description: String { "#\(self.rawValue)" }
}

/// The queue side a handle cancels through (kept non-generic so handles are).
package protocol RequestCancelling: AnyObject, Sendable {
    func cancel(_ id: RequestID) -> Bool
}

/// A submitted request: its identity, its current state, and a way to cancel it.
///
/// A handle holds its queue strongly (so `cancel()` always reaches it); keeping handles keeps
/// the queue alive.
public final class RequestHandle: Sendable, CustomStringConvertible {
    /// The request's id (submission order).
    public let id: RequestID
    /// The priority it was submitted with.
    public let priority: RequestPriority
    /// Its kind, if any (at most one request of a kind is in flight).
    public let kind: RequestKind?
    /// Written on the queue's scheduler, read from any thread (the seam).
    private let stateValue = SeamAtomic<UInt8>(RequestState.initial.rawValue)
    private let owner: any RequestCancelling

    package init(id: RequestID, priority: RequestPriority, kind: RequestKind?, owner: any RequestCancelling) {
        self.id = id
        self.priority = priority
        self.kind = kind
        self.owner = owner
    }

    /// The request's state as the queue last decided it (observers hear of it just after, on
    /// the queue's scheduler). Readable from any thread.
    public var state: RequestState {
        RequestState(rawValue: self.stateValue.load(ordering: .acquiring))!
    }

    /// Ends the request with `RequestError.cancelled` unless it has already ended. A response
    /// that arrives later is ignored. The completion runs on the queue's scheduler, after this
    /// call returns.
    ///
    /// - Returns: `true` when this call ended the request; `false` when it had already ended.
    /// - Complexity: O(1) plus starting whatever the freed slot lets start.
    @discardableResult
    public func cancel() -> Bool {
        self.owner.cancel(self.id)
    }

    package func setState(_ state: RequestState) {
        self.stateValue.store(state.rawValue, ordering: .releasing)
    }

    /// The id, priority, kind and current state, for logs.
    public var description: String {
        "RequestHandle(\(self.id), \(self.priority)\(self.kind.map { ", kind \($0)" } ?? ""), \(self.state))"
    }
}
