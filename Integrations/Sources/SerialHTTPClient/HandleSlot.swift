import SerialRuntime
import Synchronization

/// Meets a task's cancellation and its request's handle, in whichever order they come.
final class HandleSlot: Sendable {
    private enum Phase {
        case empty
        case attached(RequestHandle)
        case cancelled
    }

    private let phase = Mutex(Phase.empty)

    func attach(_ handle: RequestHandle) {
        let cancelNow = self.phase.withLock { phase in
            if case .cancelled = phase { return true }
            phase = .attached(handle)
            return false
        }
        if cancelNow { handle.cancel() }
    }

    func cancel() {
        let handle = self.phase.withLock { phase -> RequestHandle? in
            defer { phase = .cancelled }
            if case .attached(let handle) = phase { return handle }
            return nil
        }
        handle?.cancel()
    }
}
