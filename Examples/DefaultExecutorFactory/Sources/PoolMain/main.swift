import Glibc
import SerialExperimentalExecutors

// The program's default executors: tasks on a WorkerPool, the main actor on the main thread.
// example: PoolExecutorFactory
typealias DefaultExecutorFactory = PoolExecutorFactory
// end example

/// The first line of a file of /proc, without its newline.
func firstLine(of path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 256)
    guard fgets(&buffer, 256, file) != nil else { return nil }
    let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return text.hasSuffix("\n") ? String(text.dropLast()) : text
}

/// The names of this process's threads, from /proc/self/task.
func threadNames() -> [String] {
    guard let directory = opendir("/proc/self/task") else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        let id = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if id.first?.isNumber == true, let name = firstLine(of: "/proc/self/task/\(id)/comm") { names.append(name) }
    }
    return names
}

/// The calling thread's name.
func threadName() -> String { firstLine(of: "/proc/thread-self/comm") ?? "?" }

/// The main thread, read before the first suspension (top-level code starts on it).
let mainThread = pthread_self()
func onMainThread() -> Bool { pthread_equal(pthread_self(), mainThread) != 0 }

// Each line reads "claim: true|false"; scripts/check-default-executor.sh checks them.
let onPool = await Task.detached { threadName().hasPrefix("DefaultPool") }.value
print("a detached task runs on the default pool:", onPool)
let mainActorOnMain = await Task.detached { await MainActor.run { onMainThread() } }.value
print("the main actor runs on the main thread:", mainActorOnMain)
let start = ContinuousClock.now
try await Task.sleep(for: .milliseconds(50))  // on the main actor: the default executor schedules it
print("a 50 ms Task.sleep lasts at least 50 ms:", ContinuousClock.now - start >= .milliseconds(50))
print("the main actor resumes on the main thread after it:", onMainThread())
print("the sleep was a timer on the default executor's wheel:", PoolExecutorFactory.taskExecutor.timers.wakeUpCount > 0)
let children = await withTaskGroup(of: Bool.self) { group in
    for _ in 0..<100 { group.addTask { threadName().hasPrefix("DefaultPool") } }
    var all = true
    for await onPool in group { all = all && onPool }
    return all
}
print("100 child tasks run on the default pool:", children)
let names = threadNames()
let program = names.first ?? ""
let foreign = names.dropFirst().filter { !$0.hasPrefix("DefaultPool") }
print("threads: \(names.joined(separator: ", "))")
print("every thread but the main one is the default pool's:", foreign.isEmpty)
