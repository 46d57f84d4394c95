import Glibc
import SerialRuntime
import Synchronization

/// Async and sync work from several threads, in one order, sync on the caller's thread.
enum SerialQueueScene {
    static func run() {
        print("== SerialQueue: one order for async and sync work ==")
        let queue = SerialQueue(label: "demo.serial")
        let log = Mutex<[String]>([])
        let producers = 3
        let done = Atomic<Int>(0)
        let workers = (0..<producers).map { producer in
            SerialQueue(label: "producer-\(producer)")
        }
        for (producer, worker) in workers.enumerated() {
            worker.async {
                for step in 0..<3 {
                    if step == 1 {
                        // sync: the body runs right here, on producer-N's thread, at its turn.
                        let thread = currentThreadLabel()
                        queue.sync { log.withLock { $0.append("producer \(producer) sync  #\(step) on \(thread)") } }
                    } else {
                        queue.async {
                            let thread = currentThreadLabel()
                            log.withLock { $0.append("producer \(producer) async #\(step) on \(thread)") }
                        }
                    }
                }
                done.add(1, ordering: .releasing)
            }
        }
        for worker in workers { worker.shutdown() }
        queue.shutdown()
        let lines = log.withLock { $0 }
        for (index, line) in lines.enumerated() {
            print(String(index + 1).leftPadded(to: 3), line)
        }
        // The claims, checked on the lines above rather than asserted.
        let inOrder = (0..<producers).allSatisfy { producer in
            lines.filter { $0.hasPrefix("producer \(producer) ") }.map { $0.split(separator: "#")[1].prefix(1) } == ["0", "1", "2"]
        }
        let syncOnCaller = lines.filter { $0.contains(" sync ") }.allSatisfy { line in
            line.hasSuffix("on producer-\(line.split(separator: " ")[1])")
        }
        let asyncOnWorker = lines.filter { $0.contains(" async ") }.allSatisfy { $0.hasSuffix("on demo.serial") }
        print("Each producer's three steps in its own order: \(inOrder ? "yes" : "NO"); sync bodies on the caller's",
              "thread: \(syncOnCaller ? "yes" : "NO"); async work on the queue's worker: \(asyncOnWorker ? "yes" : "NO").\n")
    }
}

/// The kernel's name for the calling thread (a queue's worker is named after its label).
func currentThreadLabel() -> String {
    guard let file = fopen("/proc/thread-self/comm", "r") else { return "?" }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 32)
    guard fgets(&buffer, 32, file) != nil else { return "?" }
    return String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension String {
    func leftPadded(to width: Int) -> String {
        String(repeating: " ", count: max(0, width - self.count)) + self
    }
}
