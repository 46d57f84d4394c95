import Glibc
import Logging
import Synchronization

/// A swift-log handler that keeps every message, for tests.
struct RecordingLogHandler: LogHandler {
    struct Entry: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
    }

    final class Store: Sendable {
        private let entries = Mutex<[Entry]>([])
        func append(_ entry: Entry) { self.entries.withLock { $0.append(entry) } }
        var all: [Entry] { self.entries.withLock { $0 } }
    }

    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        self.store.append(Entry(level: event.level, message: "\(event.message)", metadata: event.metadata ?? [:]))
    }
}

extension Logger {
    /// A logger that records into `store`.
    static func recording(into store: RecordingLogHandler.Store) -> Logger {
        Logger(label: "test") { _ in RecordingLogHandler(store: store) }
    }
}

/// Waits (polling each millisecond) for `condition`, at most `timeout`; returns whether it held.
func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while !condition() {
        if clock.now > deadline { return false }
        var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
        nanosleep(&pause, nil)
    }
    return true
}
