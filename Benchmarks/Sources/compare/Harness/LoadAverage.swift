import Glibc

/// The machine's load averages (/proc/loadavg, through `getloadavg`), read before and after each
/// row so a reader of the JSON can tell a quiet run from a loaded one.
struct LoadAverage: Sendable {
    /// Runnable and running threads averaged over 1, 5 and 15 minutes.
    var oneMinute: Double
    var fiveMinutes: Double
    var fifteenMinutes: Double

    /// The averages now; `nil` when the system cannot tell.
    static func now() -> LoadAverage? {
        var values = [Double](repeating: 0, count: 3)
        guard getloadavg(&values, 3) == 3 else { return nil }
        return LoadAverage(oneMinute: values[0], fiveMinutes: values[1], fifteenMinutes: values[2])
    }

    /// `[1 min, 5 min, 15 min]`, as JSON.
    var json: String { "[\(self.oneMinute),\(self.fiveMinutes),\(self.fifteenMinutes)]" }
}
