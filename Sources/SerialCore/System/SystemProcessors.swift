import Glibc
import Synchronization

/// Reads what `PoolWidth` decides from: the affinity mask, the cgroup CPU quota, and the
/// override variable. Text files only, read once per call; nothing is cached.
enum SystemProcessors {
    /// The processors this process may run on: its `Cpus_allowed_list` in `/proc/self/status`
    /// (the affinity mask, which a cpuset narrows), no more than the online processors; the
    /// online processors when the list cannot be read.
    static func allowedProcessorCount(procSelfStatus: String = "/proc/self/status") -> Int {
        let online = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        guard let status = Self.readSmallFile(procSelfStatus, upTo: 1 << 16),
            let allowed = PoolWidth.allowedProcessors(procSelfStatus: status)
        else { return online }
        return min(online, allowed)
    }

    /// The smallest CPU quota, in processors, of this process's cgroup and its ancestors (v2's
    /// `cpu.max`, else v1's CFS quota), under the usual mount points below `root`; `nil` when
    /// none is set or nothing can be read.
    static func cgroupQuota(root: String = "/sys/fs/cgroup", procSelfCgroup: String = "/proc/self/cgroup") -> Double? {
        guard let membership = Self.readSmallFile(procSelfCgroup) else { return nil }
        let paths = PoolWidth.cgroupPaths(procSelfCgroup: membership)
        var smallest: Double?
        func consider(_ quota: Double?) {
            if let quota, quota < (smallest ?? .infinity) { smallest = quota }
        }
        if let v2 = paths.v2 {
            for path in PoolWidth.selfAndAncestors(of: v2) {
                consider(Self.readSmallFile(root + Self.joined(path, "cpu.max")).flatMap(PoolWidth.cgroupV2Quota))
            }
        }
        if smallest == nil, let v1 = paths.v1CPU {
            for mount in ["\(root)/cpu,cpuacct", "\(root)/cpu"] {
                for path in PoolWidth.selfAndAncestors(of: v1) {
                    guard let quota = Self.readSmallFile(mount + Self.joined(path, "cpu.cfs_quota_us")),
                        let period = Self.readSmallFile(mount + Self.joined(path, "cpu.cfs_period_us"))
                    else { continue }
                    consider(PoolWidth.cgroupV1Quota(quota: quota, period: period))
                }
            }
        }
        return smallest
    }

    /// The override variable's raw value, if set.
    static func overrideValue() -> String? {
        getenv(PoolWidth.overrideVariable).map { String(cString: $0) }
    }

    /// The default width for this process, reporting an invalid override once on standard error
    /// (it is ignored: a typo in a deployment must not stop a server from starting).
    static func defaultPoolWidth() -> Int {
        let decision = PoolWidth.decide(
            processors: Self.allowedProcessorCount(), quota: Self.cgroupQuota(), override: Self.overrideValue())
        if let ignored = decision.ignoredOverride, !Self.reportedInvalidOverride.exchange(true, ordering: .relaxed) {
            let message = """
                swift-serial-runtime: \(PoolWidth.overrideVariable)="\(ignored)" is not a whole number of \
                threads from 1 to \(PoolWidth.maximumOverride), so it is ignored; WorkerPool's default width is \(decision.threads) \
                (\(decision.reason)). Set it to a number such as 4, or unset it.\n
                """
            _ = message.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        }
        return decision.threads
    }

    private static let reportedInvalidOverride = Atomic<Bool>(false)

    private static func joined(_ directory: String, _ file: String) -> String {
        directory.hasSuffix("/") ? directory + file : directory + "/" + file
    }

    /// The text of a small file (at most `limit` bytes read), or `nil` if it cannot be read.
    static func readSmallFile(_ path: String, upTo limit: Int = 4096) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: limit)
        var length = 0
        while length < buffer.count {
            let count = buffer.withUnsafeMutableBytes { bytes in
                read(descriptor, bytes.baseAddress! + length, bytes.count - length)
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            length += count
        }
        return String(decoding: buffer[..<length], as: UTF8.self)
    }
}
