import Glibc

/// Context-switch counts from /proc: every switch away from a thread is a sleep or a preemption,
/// so on an otherwise idle process their growth counts the thread's wake-ups.
enum ContextSwitches {
    /// The calling thread's id (the TID in /proc/self/task), from the /proc/thread-self link.
    static func currentThreadID() -> Int {
        var buffer = [CChar](repeating: 0, count: 256)
        let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        precondition(length > 0, "readlink(/proc/thread-self) failed with errno \(errno)")
        let target = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let tid = target.split(separator: "/").last.flatMap({ Int($0) }) else {
            fatalError("compare: unexpected /proc/thread-self target \(target)")
        }
        return tid
    }

    /// voluntary + nonvoluntary context switches of thread `tid` of this process so far
    /// (`nil` when the thread has exited).
    static func of(thread tid: Int) -> Int? {
        guard let status = readTextFile("/proc/self/task/\(tid)/status") else { return nil }
        var total = 0
        for line in status.split(separator: "\n")
        where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
            total += Int(line.split(separator: ":")[1].trimmingCharacters(in: " \t")) ?? 0
        }
        return total
    }

    /// The ids of every live thread of this process.
    static func threadIDs() -> [Int] {
        guard let directory = opendir("/proc/self/task") else { return [] }
        defer { closedir(directory) }
        var ids: [Int] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let id = Int(name) { ids.append(id) }
        }
        return ids
    }

    /// Switches per thread, for every live thread except `excluded`.
    static func snapshot(excluding excluded: Int) -> [Int: Int] {
        var counts: [Int: Int] = [:]
        for tid in Self.threadIDs() where tid != excluded {
            counts[tid] = Self.of(thread: tid)
        }
        return counts
    }

    /// Switches made between two snapshots (a thread started in between counts in full).
    static func growth(from before: [Int: Int], to after: [Int: Int]) -> Int {
        after.reduce(0) { sum, entry in sum + entry.value - (before[entry.key] ?? 0) }
    }
}
