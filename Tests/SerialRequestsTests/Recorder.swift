import SerialCore
import SerialRequests

/// Collects completions and state changes by the test's own tag, to count exactly-once.
final class Recorder: Sendable {
    struct Record: Sendable {
        var results: [RequestResult<Reply>] = []
        var states: [RequestState] = []
    }

    let records = LockedValue<[String: Record]>([:])
    let completionOrder = LockedValue<[String]>([])

    func completion(_ tag: String) -> @Sendable (RequestResult<Reply>) -> Void {
        { result in
            self.records.withLock { $0[tag, default: Record()].results.append(result) }
            self.completionOrder.withLock { $0.append(tag) }
        }
    }

    func observer(_ tag: String) -> @Sendable (RequestState) -> Void {
        { state in self.records.withLock { $0[tag, default: Record()].states.append(state) } }
    }

    func results(_ tag: String) -> [RequestResult<Reply>] {
        self.records.withLock { $0[tag]?.results ?? [] }
    }

    /// The one result of `tag`; nil unless exactly one arrived.
    func only(_ tag: String) -> RequestResult<Reply>? {
        let results = self.results(tag)
        return results.count == 1 ? results[0] : nil
    }

    func states(_ tag: String) -> [RequestState] {
        self.records.withLock { $0[tag]?.states ?? [] }
    }

    var completedCount: Int { self.completionOrder.withLock { $0.count } }
    var order: [String] { self.completionOrder.withLock { $0 } }
}

extension RequestResult {
    var isSuccess: Bool { if case .success = self { return true } else { return false } }

    /// The error's case name, to compare in tests (`RequestError` holds `any Error`, so it is not Equatable).
    var errorName: String? {
        guard case .failure(let error) = self else { return nil }
        switch error {
        case .failed: return "failed"
        case .retriesExhausted: return "retriesExhausted"
        case .tooManyRedirects: return "tooManyRedirects"
        case .refreshFailed: return "refreshFailed"
        case .refreshTimedOut: return "refreshTimedOut"
        case .refreshLimitExceeded: return "refreshLimitExceeded"
        case .cacheMiss: return "cacheMiss"
        case .timedOut: return "timedOut"
        case .cancelled: return "cancelled"
        case .shutDown: return "shutDown"
        case .schedulerShutDown: return "schedulerShutDown"
        }
    }
}

typealias TestQueue = RequestQueue<SimulatedServer>
