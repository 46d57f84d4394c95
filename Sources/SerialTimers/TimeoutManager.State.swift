import SerialCore

extension TimeoutManager {
    typealias Completion = @Sendable (TimeoutOutcome<Value>) -> Void

    /// One task in flight: who waits for it, its key, its deadline timer.
    struct Entry {
        var key: String?
        var first: Completion
        var joined: [Completion] = []
        var timer: TimerHandle? = nil

        var completions: [Completion] { [self.first] + self.joined }
    }

    /// Decided outcomes handed to the scheduler and not yet delivered: a scheduler that shuts
    /// down with `.cancelPending` drops the delivery, and its shutdown handler then finds them here.
    struct Delivery {
        var entries: [Entry]
        var outcome: TimeoutOutcome<Value>
        /// `.cancelled` keeps its outcome when the scheduler drops it; a result becomes
        /// `.schedulerShutDown`, as when the scheduler refuses it outright.
        var keepsOutcome: Bool

        func outcome(whenShutDownBy error: SchedulingError) -> TimeoutOutcome<Value> {
            self.keepsOutcome ? self.outcome : .schedulerShutDown(error)
        }
    }

    /// A task's terminal outcome kind, for `serviceStatistics`.
    enum OutcomeKind: Int, CaseIterable {
        case completed, failed, timedOut, cancelled, schedulerShutDown

        init(_ outcome: TimeoutOutcome<Value>) {
            switch outcome {
            case .completed: self = .completed
            case .failed: self = .failed
            case .timedOut: self = .timedOut
            case .cancelled: self = .cancelled
            case .schedulerShutDown: self = .schedulerShutDown
            }
        }

        var name: String {
            switch self {
            case .completed: return "completed"
            case .failed: return "failed"
            case .timedOut: return "timedOut"
            case .cancelled: return "cancelled"
            case .schedulerShutDown: return "schedulerShutDown"
            }
        }
    }

    enum Begin {
        case started(UInt64)
        case joined
        /// Started, then ended at once (its scheduler was found gone); its outcome is delivered.
        case ended
    }

    /// Everything the manager's mutex guards; each operation returns what to do after the lock.
    ///
    /// - Invariant: a task is in `tasks` from its start until its one outcome is decided;
    ///   `keys[key]` names the in-flight task of that key, if any, and nothing else.
    struct State {
        var tasks: [UInt64: Entry] = [:]
        var keys: [String: UInt64] = [:]
        var nextID: UInt64 = 0
        var isShutDown = false
        /// Set when the scheduler's shutdown ended the manager (rather than `shutdown()`).
        var schedulerShutDown: SchedulingError? = nil
        var deliveries: [UInt64: Delivery] = [:]
        var nextDelivery: UInt64 = 0
        var lateResults = 0
        var skippedOperations = 0
        /// Tasks started, and ended tasks by the outcome kind they are delivered with (indexed
        /// by `OutcomeKind.rawValue`), for `serviceStatistics`.
        var started = 0
        var ended = [Int](repeating: 0, count: OutcomeKind.allCases.count)

        mutating func begin(
            key: String?, completion: @escaping Completion, maximumInFlight: Int
        ) throws(TimeoutManagerError) -> Begin {
            if let error = self.schedulerShutDown { throw .schedulerShutDown(error) }
            if self.isShutDown { throw .shutDown }
            if let key, let id = self.keys[key] {
                self.tasks[id]!.joined.append(completion)
                return .joined
            }
            if self.tasks.count >= maximumInFlight { throw .tooManyInFlight(limit: maximumInFlight) }
            self.nextID &+= 1
            let id = self.nextID
            self.tasks[id] = Entry(key: key, first: completion)
            self.started += 1
            if let key { self.keys[key] = id }
            return .started(id)
        }

        /// Keeps the task's deadline timer; `false` when the task already ended (cancel it).
        mutating func attach(_ timer: TimerHandle, to id: UInt64) -> Bool {
            guard self.tasks[id] != nil else { return false }
            self.tasks[id]!.timer = timer
            return true
        }

        /// Whether a worker should start the operation; counts it as skipped otherwise.
        mutating func shouldStart(_ id: UInt64) -> Bool {
            if self.tasks[id] != nil { return true }
            self.skippedOperations += 1
            return false
        }

        /// Decides the task's outcome: returns its entry when this call ended it, `nil` when it
        /// had already ended (a late result is counted; a late timeout is not).
        mutating func finish(_ id: UInt64, isResult: Bool, kind: OutcomeKind) -> Entry? {
            guard let entry = self.tasks.removeValue(forKey: id) else {
                if isResult { self.lateResults += 1 }
                return nil
            }
            self.ended[kind.rawValue] += 1
            if let key = entry.key { self.keys[key] = nil }
            return entry
        }

        mutating func addDelivery(_ delivery: Delivery) -> UInt64 {
            self.nextDelivery &+= 1
            self.deliveries[self.nextDelivery] = delivery
            return self.nextDelivery
        }

        /// Every delivery not yet made, oldest first, once the scheduler is gone: the
        /// ones that do not keep their outcome move to `.schedulerShutDown` in the counts.
        mutating func takeAllDeliveriesForSchedulerShutdown() -> [Delivery] {
            defer { self.deliveries = [:] }
            for delivery in self.deliveries.values where !delivery.keepsOutcome {
                let kind = OutcomeKind(delivery.outcome)
                self.ended[kind.rawValue] -= delivery.entries.count
                self.ended[OutcomeKind.schedulerShutDown.rawValue] += delivery.entries.count
            }
            return self.deliveries.sorted { $0.key < $1.key }.map(\.value)
        }

        /// Whether nothing is left for a shutdown handler to end.
        var isIdleAfterShutdown: Bool { self.isShutDown && self.tasks.isEmpty && self.deliveries.isEmpty }

        /// Ends every task in flight (returned, in start order) and refuses new ones; `because`
        /// records a scheduler's shutdown for the error later calls get.
        mutating func shutDown(because error: SchedulingError? = nil) -> [Entry] {
            if !self.isShutDown { self.schedulerShutDown = error }
            self.isShutDown = true
            let entries = self.tasks.sorted { $0.key < $1.key }.map(\.value)  // in start order
            self.tasks = [:]
            self.keys = [:]
            self.ended[(error == nil ? OutcomeKind.cancelled : .schedulerShutDown).rawValue] += entries.count
            return entries
        }
    }
}
