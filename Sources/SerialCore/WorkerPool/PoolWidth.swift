/// The default width of a `WorkerPool`: the processors this process may really use.
///
/// Online processors overstate it in a container: a cgroup CPU quota (`cpu.max` in cgroup v2,
/// `cpu.cfs_quota_us` / `cpu.cfs_period_us` in v1) caps the time the process gets, and a
/// cpuset or affinity mask caps the processors it may run on. More threads than that only
/// queue for the same cores and get throttled together. The width is
///
///     min(online processors, processors in the affinity mask,
///         ⌈smallest quota on the way to the root⌉), at least 1
///
/// unless `SERIAL_POOL_THREADS` names a whole number ≥ 1, which wins. Everything here is pure
/// (text in, numbers out); `SystemProcessors` reads the files.
enum PoolWidth {
    /// The environment variable that overrides the default width.
    static let overrideVariable = "SERIAL_POOL_THREADS"

    /// The largest override taken: beyond it a value is more likely a typo (10 as 100000) than a
    /// wish, and would start that many threads or stop the program when they cannot start.
    static let maximumOverride = 1_024

    /// What the default width was computed from, and the result.
    struct Decision: Equatable {
        /// The width to use (≥ 1).
        var threads: Int
        /// Why, in words (for the docs' examples and for a report of an invalid override).
        var reason: String
        /// The override's value when it was set but not a whole number ≥ 1: it was ignored.
        var ignoredOverride: String? = nil
    }

    /// The width from the processors the affinity mask allows, the CPU quota in processors (if
    /// any), and the override's raw value (if set).
    static func decide(processors: Int, quota: Double?, override: String?) -> Decision {
        var machine = max(1, processors)
        var reason = "\(machine) processors"
        // A quota that is not a finite number of processors below the machine's is no limit.
        if let quota, quota > 0, quota.isFinite, quota < Double(machine) {
            let quotaThreads = max(1, Int(quota.rounded(.up)))
            if quotaThreads < machine {
                machine = quotaThreads
                reason = "a CPU quota of \(quota) processors"
            }
        }
        guard let override else { return Decision(threads: machine, reason: reason) }
        let trimmed = override.trimmingWhitespace
        if let value = Int(trimmed), value >= 1, value <= Self.maximumOverride {
            return Decision(threads: value, reason: "\(Self.overrideVariable)=\(value)")
        }
        return Decision(threads: machine, reason: reason, ignoredOverride: override)
    }

    /// A cgroup v2 `cpu.max` ("QUOTA PERIOD", or "max PERIOD" for no limit) as processors, or
    /// `nil` for no limit or text it cannot read.
    static func cgroupV2Quota(cpuMax text: String) -> Double? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
        guard fields.count == 2, fields[0] != "max" else { return nil }
        return Self.ratio(quota: String(fields[0]), period: String(fields[1]))
    }

    /// A cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us` as processors, or `nil` for no
    /// limit (a quota of -1) or text it cannot read.
    static func cgroupV1Quota(quota: String, period: String) -> Double? {
        Self.ratio(quota: quota.trimmingWhitespace, period: period.trimmingWhitespace)
    }

    /// The cgroup paths of this process from `/proc/self/cgroup`: the v2 path (the line
    /// `0::PATH`) and the v1 path of the `cpu` controller (a line `N:...cpu...:PATH`).
    static func cgroupPaths(procSelfCgroup text: String) -> (v2: String?, v1CPU: String?) {
        var v2: String?
        var v1: String?
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, parts[2].hasPrefix("/") else { continue }
            if parts[0] == "0" && parts[1].isEmpty {
                v2 = String(parts[2])
            } else if parts[1].split(separator: ",").contains("cpu") {
                v1 = String(parts[2])
            }
        }
        return (v2, v1)
    }

    /// The number of processors in `Cpus_allowed_list` of `/proc/self/status` ("0-3,8,10-11"),
    /// or `nil` when the line is missing or malformed.
    static func allowedProcessors(procSelfStatus text: String) -> Int? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) else {
            return nil
        }
        let list = line.dropFirst("Cpus_allowed_list:".count).filter { $0 != " " && $0 != "\t" }
        guard !list.isEmpty else { return nil }
        var count = 0
        for range in list.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = range.split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count <= 2, let low = Int(bounds[0]), let high = Int(bounds.last!), low >= 0, low <= high
            else { return nil }
            // Overflow is malformed text, not a trap.
            let (size, rangeOverflow) = (high - low).addingReportingOverflow(1)
            let (total, totalOverflow) = count.addingReportingOverflow(size)
            guard !rangeOverflow, !totalOverflow else { return nil }
            count = total
        }
        return count
    }

    /// `path` and each of its ancestors up to "/", deepest first: a limit anywhere above a
    /// cgroup applies to it too, so the smallest one counts.
    static func selfAndAncestors(of path: String) -> [String] {
        var components = path.split(separator: "/").map(String.init)
        var paths: [String] = []
        while true {
            paths.append("/" + components.joined(separator: "/"))
            if components.isEmpty { return paths }
            components.removeLast()
        }
    }

    private static func ratio(quota: String, period: String) -> Double? {
        guard let quota = Int64(quota), let period = Int64(period), quota > 0, period > 0 else { return nil }
        return Double(quota) / Double(period)
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and newlines (no Foundation here).
    fileprivate var trimmingWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }
        guard let first = self.firstIndex(where: { !isSpace($0) }), let last = self.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(self[first...last])
    }
}
