import SerialCore

/// Meets a task's cancellation and the handle of its request, in whichever order they come:
/// the bridge `RequestQueue.response(for:)` uses, and one for other async faces built on
/// `submit` (an HTTP transport's, say).
///
/// Cancelled first, the handle is cancelled as soon as it is attached; attached first, the
/// handle is cancelled when `cancel()` comes. Either way `RequestHandle.cancel()` runs at most
/// once through the slot.
public final class RequestCancellationSlot: Sendable {
    private enum Phase {
        case empty
        case attached(RequestHandle)
        case cancelled
    }

    private let phase = LockedValue(Phase.empty)

    /// An empty slot.
    public init() {}

    /// Keeps `handle`, or cancels it at once if `cancel()` came first.
    public func attach(_ handle: RequestHandle) {
        let cancelNow = self.phase.withLock { phase in
            if case .cancelled = phase { return true }
            phase = .attached(handle)
            return false
        }
        if cancelNow { handle.cancel() }
    }

    /// Cancels the attached handle, or the one attached later.
    public func cancel() {
        let handle = self.phase.withLock { phase -> RequestHandle? in
            defer { phase = .cancelled }
            if case .attached(let handle) = phase { return handle }
            return nil
        }
        handle?.cancel()
    }
}
